// The Java kafka-clients program of the compat suite; same contract as programs/pyclient.py:
//   java KafketteClient metadata BOOTSTRAP TOPIC
//   java KafketteClient produce  BOOTSTRAP TOPIC COUNT PREFIX PARTITIONS
//   java KafketteClient consume  BOOTSTRAP TOPIC COUNT
//   java KafketteClient member   BOOTSTRAP TOPIC GROUP SESSION_MS   (stdin: commit | close)
//   java KafketteClient txcopy   BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID COUNT
//       (consume-transform-produce with sendOffsetsToTransaction; the first transaction aborts)
// Prints one JSON object per line.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class KafketteClient {
    private KafketteClient() {}

    static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\');
            if (c < 0x20) b.append(String.format("\\u%04x", (int) c)); else b.append(c);
        }
        return b.append('"').toString();
    }

    static synchronized void emit(String event, String fields) {
        System.out.println("{\"event\":\"" + event + "\"" + (fields.isEmpty() ? "" : "," + fields) + "}");
        System.out.flush();
    }

    static void record(ConsumerRecord<String, String> r) {
        emit("record", "\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                + ",\"key\":" + quote(r.key()) + ",\"value\":" + quote(r.value()));
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) ps.add(tp.partition());
        ps.sort(null);
        return "\"partitions\":" + ps;
    }

    static Properties base(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        // Security settings (security.protocol, sasl.*, ssl.*) from a client properties file.
        String extra = System.getenv("KAFKETTE_CLIENT_CONFIG");
        if (extra != null) {
            try (java.io.FileInputStream in = new java.io.FileInputStream(extra)) {
                p.load(in);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return p;
    }

    public static void main(String[] args) throws Exception {
        String cmd = args[0], bootstrap = args[1], topic = args[2];
        switch (cmd) {
            case "metadata" -> metadata(bootstrap, topic);
            case "produce" -> produce(bootstrap, topic, Integer.parseInt(args[3]), args[4], Integer.parseInt(args[5]));
            case "consume" -> consume(bootstrap, topic, Integer.parseInt(args[3]));
            case "member" -> member(bootstrap, topic, args[3], Integer.parseInt(args[4]),
                    args.length > 5 ? args[5] : "classic");
            case "txcopy" -> txcopy(bootstrap, topic, args[3], args[4], args[5], Integer.parseInt(args[6]));
            default -> throw new IllegalArgumentException(cmd);
        }
        emit("done", "");
    }

    static void metadata(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(base(bootstrap))) {
            DescribeClusterResult cluster = admin.describeCluster();
            List<String> brokers = new ArrayList<>();
            for (Node n : cluster.nodes().get()) brokers.add("[" + n.id() + "," + quote(n.host()) + "," + n.port() + "]");
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            emit("metadata", "\"partitions\":" + d.partitions().size() + ",\"brokers\":" + brokers
                    + ",\"controller\":" + cluster.controller().get().id());
        }
    }

    static void produce(String bootstrap, String topic, int count, String prefix, int partitions) throws Exception {
        Properties p = base(bootstrap);
        p.put("acks", "all");
        p.put("linger.ms", "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String v = prefix + "-" + i;
                futures.add(producer.send(new ProducerRecord<>(topic, i % partitions, v, v)));
            }
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata md = f.get();
                emit("produced", "\"partition\":" + md.partition() + ",\"offset\":" + md.offset());
            }
        }
    }

    static void consume(String bootstrap, String topic, int count) {
        Properties p = base(bootstrap);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic)) tps.add(new TopicPartition(topic, pi.partition()));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            int seen = 0;
            while (seen < count) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    record(r);
                    seen++;
                }
            }
        }
    }

    static void txcopy(String bootstrap, String in, String out, String group, String tid, int count) {
        Properties c = base(bootstrap);
        c.put("group.id", group);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        Properties p = base(bootstrap);
        p.put("transactional.id", tid);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            int copied = 0;
            boolean aborted = false;
            while (copied < count) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, r.key(), r.value()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (!aborted) {
                    aborted = true;
                    producer.abortTransaction();
                    for (TopicPartition tp : records.partitions()) consumer.seek(tp, records.records(tp).get(0).offset());
                    emit("aborted", "\"records\":" + records.count());
                    continue;
                }
                producer.commitTransaction();
                copied += records.count();
                emit("committed", "\"records\":" + records.count());
            }
        }
    }

    static void member(String bootstrap, String topic, String group, int sessionMs, String protocol) throws Exception {
        Properties p = base(bootstrap);
        p.put("group.id", group);
        p.put("client.id", "java-" + group);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        if (protocol.equals("consumer")) {
            // KIP-848: the broker owns the session timeout, heartbeat interval and assignment
            p.put("group.protocol", "consumer");
        } else {
            p.put("session.timeout.ms", Integer.toString(sessionMs));
            p.put("heartbeat.interval.ms", Integer.toString(Math.max(sessionMs / 5, 50)));
        }
        p.put("max.poll.interval.ms", "10000");
        ConcurrentLinkedQueue<String> commands = new ConcurrentLinkedQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) commands.add(line.trim());
            } catch (Exception e) {
                // stdin gone: fall through to close
            }
            commands.add("close");
        });
        reader.setDaemon(true);
        reader.start();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override public void onPartitionsRevoked(Collection<TopicPartition> revoked) {}
                @Override public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    emit("assigned", partitions(consumer.assignment()));
                }
            });
            while (true) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) record(r);
                String command;
                while ((command = commands.poll()) != null) {
                    if (command.equals("commit")) {
                        Map<Integer, Long> done = new TreeMap<>();
                        for (TopicPartition tp : consumer.assignment()) done.put(tp.partition(), consumer.position(tp));
                        consumer.commitSync();
                        StringBuilder b = new StringBuilder("\"offsets\":{");
                        String sep = "";
                        for (Map.Entry<Integer, Long> e : done.entrySet()) {
                            b.append(sep).append('"').append(e.getKey()).append("\":").append(e.getValue());
                            sep = ",";
                        }
                        emit("committed", b.append('}').toString());
                    } else if (command.equals("close")) {
                        return;
                    }
                }
            }
        }
    }
}
