// The controller mutation quota with the Java AdminClient (kafka-clients 3.9.1), for tests/quotas:
//   java KafketteMutations BOOTSTRAP CLIENT_ID
// creates topic "j1" (10 partitions), then "j2" and "j3" (10 and 1) in one call, not retried on
// a quota violation; prints one JSON object per line: {"event":"created","topic":NAME} or
// {"event":"refused","topic":NAME,"error":"Class: message","throttle_ms":N}. (The client waits
// out a throttle time before its next request to the broker, so it stops there.)

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;

public final class KafketteMutations {
    private KafketteMutations() {}

    static void report(String done, String topic, KafkaFuture<?> future) throws Exception {
        try {
            future.get();
            KafketteClient.emit(done, "\"topic\":" + KafketteClient.quote(topic));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            long throttle = cause instanceof ThrottlingQuotaExceededException t ? t.throttleTimeMs() : -1;
            KafketteClient.emit("refused", "\"topic\":" + KafketteClient.quote(topic)
                + ",\"error\":" + KafketteClient.quote(cause.getClass().getSimpleName() + ": "
                + cause.getMessage()) + ",\"throttle_ms\":" + throttle);
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("client.id", args[1]);
        try (Admin admin = Admin.create(props)) {
            CreateTopicsOptions noRetry = new CreateTopicsOptions().retryOnQuotaViolation(false);
            report("created", "j1", admin.createTopics(
                List.of(new NewTopic("j1", 10, (short) 1)), noRetry).values().get("j1"));
            Map<String, KafkaFuture<Void>> both = admin.createTopics(List.of(
                new NewTopic("j2", 10, (short) 1), new NewTopic("j3", 1, (short) 1)), noRetry).values();
            report("created", "j2", both.get("j2"));
            report("created", "j3", both.get("j3"));
        }
    }
}
