// Client quotas with the Java AdminClient (kafka-clients 3.9.1), for tests/quotas:
//   java KafketteQuotas BOOTSTRAP
// alters quotas (a client id, the default user, a user and client id), then describes them with
// three filters; prints one JSON object per line: {"event":"altered"} and
// {"event":"described","filter":NAME,"entity":{...},"quotas":{...}}, or {"event":"error",...}.

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterClientQuotasOptions;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

public final class KafketteQuotas {
    private KafketteQuotas() {}

    static String json(Map<String, ?> map) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, ?> e : new TreeMap<String, Object>(map).entrySet()) {
            if (b.length() > 1) b.append(',');
            b.append(KafketteClient.quote(e.getKey())).append(':');
            Object v = e.getValue();
            b.append(v instanceof String s ? KafketteClient.quote(s) : String.valueOf(v));
        }
        return b.append('}').toString();
    }

    static void describe(Admin admin, String name, ClientQuotaFilter filter) throws Exception {
        Map<ClientQuotaEntity, Map<String, Double>> found =
            admin.describeClientQuotas(filter).entities().get();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : found.entrySet()) {
            KafketteClient.emit("described", "\"filter\":" + KafketteClient.quote(name)
                + ",\"entity\":" + json(e.getKey().entries()) + ",\"quotas\":" + json(e.getValue()));
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(props)) {
            java.util.HashMap<String, String> defaultUser = new java.util.HashMap<>();
            defaultUser.put(ClientQuotaEntity.USER, null);
            admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "java-app")),
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0))),
                new ClientQuotaAlteration(new ClientQuotaEntity(defaultUser),
                    List.of(new ClientQuotaAlteration.Op("request_percentage", 50.0))),
                new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "alice",
                        ClientQuotaEntity.CLIENT_ID, "java-app")),
                    List.of(new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0))))).all().get();
            KafketteClient.emit("altered", "");
            try {
                admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                    new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "x")),
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1.5)))),
                    new AlterClientQuotasOptions()).all().get();
            } catch (ExecutionException e) {
                KafketteClient.emit("refused", "\"error\":" + KafketteClient.quote(
                    e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage()));
            }
            describe(admin, "all", ClientQuotaFilter.all());
            describe(admin, "client java-app", ClientQuotaFilter.contains(
                List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, "java-app"))));
            describe(admin, "default user only", ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.USER))));
        }
    }
}
