// The Java Admin's partition reassignments against a kafkette cluster (tests/cluster):
//   java KafketteReassign BOOTSTRAP TOPIC
// The topic has partitions 0 and 1 on nodes [1, 2]; node 3 is stopped. Moves partition 0 to [2]
// (completes), partition 1 to [3, 2] (waits for node 3), lists and describes, cancels the
// waiting move, then asks for bad moves. Prints one JSON object per line.

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

public final class KafketteReassign {
    private KafketteReassign() {}

    static void emit(String event, String fields) {
        System.out.println("{\"event\":\"" + event + "\"," + fields + "}");
        System.out.flush();
    }

    static String ids(Collection<Node> nodes) {
        List<Integer> out = new ArrayList<>();
        for (Node n : nodes) out.add(n.id());
        return out.toString();
    }

    static String outcome(KafkaFuture<Void> f) throws InterruptedException {
        try {
            f.get();
            return "\"NONE\"";
        } catch (ExecutionException e) {
            return "\"" + e.getCause().getClass().getSimpleName() + "\"";
        }
    }

    static void alter(Admin admin, String step, Map<TopicPartition, Optional<NewPartitionReassignment>> moves)
            throws InterruptedException {
        Map<TopicPartition, KafkaFuture<Void>> results = admin.alterPartitionReassignments(moves).values();
        for (Map.Entry<TopicPartition, KafkaFuture<Void>> e : results.entrySet()) {
            emit("altered", "\"step\":\"" + step + "\",\"partition\":" + e.getKey().partition()
                    + ",\"error\":" + outcome(e.getValue()));
        }
    }

    static void list(Admin admin, String step) throws Exception {
        Map<TopicPartition, PartitionReassignment> ongoing = admin.listPartitionReassignments().reassignments().get();
        List<String> listed = new ArrayList<>();
        for (Map.Entry<TopicPartition, PartitionReassignment> e : ongoing.entrySet()) {
            PartitionReassignment r = e.getValue();
            listed.add("[\"" + e.getKey() + "\"," + r.replicas() + "," + r.addingReplicas() + ","
                    + r.removingReplicas() + "]");
        }
        emit("listed", "\"step\":\"" + step + "\",\"ongoing\":" + listed);
    }

    static void describe(Admin admin, String topic, String step) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        for (TopicPartitionInfo p : d.partitions()) {
            emit("partition", "\"step\":\"" + step + "\",\"partition\":" + p.partition() + ",\"leader\":"
                    + (p.leader() == null ? -1 : p.leader().id()) + ",\"replicas\":" + ids(p.replicas())
                    + ",\"isr\":" + ids(p.isr()));
        }
    }

    static Optional<NewPartitionReassignment> to(Integer... replicas) {
        return Optional.of(new NewPartitionReassignment(List.of(replicas)));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Map<String, Object> config = new HashMap<>();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (Admin admin = Admin.create(config)) {
            Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new TreeMap<>(
                    (a, b) -> Integer.compare(a.partition(), b.partition()));
            moves.put(p0, to(2));
            moves.put(p1, to(3, 2));
            alter(admin, "move", moves);
            list(admin, "moving");
            describe(admin, topic, "moving");

            alter(admin, "cancel", Map.of(p1, Optional.empty()));
            list(admin, "cancelled");
            describe(admin, topic, "cancelled");

            Map<TopicPartition, Optional<NewPartitionReassignment>> bad = new HashMap<>();
            bad.put(p0, to(1, 1));
            bad.put(p1, Optional.empty());
            bad.put(new TopicPartition(topic, 9), to(1));
            alter(admin, "bad", bad);
            alter(admin, "unknown-broker", Map.of(p0, to(7)));
        }
        emit("done", "\"ok\":true");
    }
}
