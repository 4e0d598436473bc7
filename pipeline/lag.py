"""The lag job: tables of commits, lag at each commit, commit rates, rebalances, log end offsets.

Definitions (the summary repeats them):
- log end offset of a partition at time T = 1 + the greatest offset among its records
  (transaction markers included) with timestamp <= T (the stored record timestamp: CreateTime or
  LogAppendTime); before any record, the log start offset. Timestamps are the only clock in the
  log: producers with skewed clocks skew this curve.
- lag at a commit = that log end offset at the commit's ``commit_time`` - the committed offset.
- generation at a commit = generation of the last group-metadata record *before the commit record
  in ``__consumer_offsets``* (same partition for one group, so log order is exact).
- a rebalance = a group-metadata record with members (group Stable). ``not_stable_ms`` = its
  record time - the time the group stopped being Stable. Kafka does not persist the start of
  PreparingRebalance (join-phase membership is memory only), so when the previous record was
  Stable too, the start is the end of the join phase (``state_time``) and ``not_stable_exact`` is
  false: the value is a lower bound. After an Empty record it is exact (from that record's state
  time).
- share-group lag of a share-partition (KIP-932) = its partition's final log end offset - its
  share-partition start offset (SPSO, the last one written to ``__share_group_state``) - the
  records past the SPSO already acknowledged or archived (the delivery-complete count of the
  last state record; 0 when it was not written). A share-partition whose state was deleted (a
  tombstone last) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from . import share_state
from .offsets import COMMIT_COLUMNS, DDL, GROUP_COLUMNS, OFFSETS_TOPIC, decode_arrow

TABLES = ("commits", "group_metadata", "log_end_offsets", "lag", "lag_over_time", "current_lag",
          "commit_rates", "rebalances", "share_lag")
GRID_POINTS = 600


@dataclass
class Tables:
    commits: DataFrame
    group_metadata: DataFrame
    log_end_offsets: DataFrame
    lag: DataFrame
    lag_over_time: DataFrame
    current_lag: DataFrame
    commit_rates: DataFrame
    rebalances: DataFrame
    share_lag: DataFrame
    cached: list[DataFrame] = field(default_factory=list)

    def items(self) -> list[tuple[str, DataFrame]]:
        return [(name, getattr(self, name)) for name in TABLES]

    def materialized(self) -> Tables:
        """The same tables, each kept in memory once first computed: writing a table and then
        reading it for the report computes it once (the tables are small next to the logs)."""
        kept = {name: df.cache() for name, df in self.items()}
        return Tables(**kept, cached=[*self.cached, *kept.values()])

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


def _ms(col: str | Column) -> Column:
    return F.unix_millis(F.col(col) if isinstance(col, str) else col)


def read_offsets(spark: SparkSession, log_dirs: str) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(commits, group metadata, both) from ``__consumer_offsets``, decoded in one pass."""
    # An aborted TxnOffsetCommit never took effect: it is no commit.
    raw = (spark.read.format("kafkette").option("topics", OFFSETS_TOPIC).load(log_dirs)
           .filter(~F.col("aborted"))
           .select("partition", "offset", "timestamp", "key", "value"))
    decoded = raw.mapInArrow(decode_arrow, DDL).cache()
    commits = decoded.filter(F.col("kind") == "commit").select(*COMMIT_COLUMNS)
    groups = decoded.filter(F.col("kind") == "group").select(*GROUP_COLUMNS)
    return commits, groups, decoded


def end_offset_points(spark: SparkSession, log_dirs: str) -> DataFrame:
    """Per partition and record timestamp: the smallest offset, 1 + the greatest offset, and
    how many records (markers not counted) and aborted records it holds."""
    # Transaction markers take offsets too: a consumer past one commits beyond the last record.
    data = (spark.read.format("kafkette").option("columns", "meta").option("include_control", "true")
            .option("exclude_topics", OFFSETS_TOPIC).load(log_dirs))
    return (data.groupBy("topic", "partition", "timestamp")
            .agg(F.min("offset").alias("min_offset"), (F.max("offset") + 1).alias("end_offset"),
                 F.count(F.when(~F.col("control"), 1)).alias("records"),
                 F.count(F.when(F.col("aborted"), 1)).alias("aborted_records")))


def log_end_offsets(points: DataFrame) -> DataFrame:
    return (points.groupBy("topic", "partition")
            .agg(F.min("min_offset").alias("log_start_offset"),
                 F.max("end_offset").alias("log_end_offset"),
                 F.sum("records").alias("records"),
                 F.sum("aborted_records").alias("aborted_records"),
                 F.min("timestamp").alias("first_timestamp"),
                 F.max("timestamp").alias("last_timestamp")))


def lag_at_commits(commits: DataFrame, points: DataFrame, bounds: DataFrame,
                   groups: DataFrame) -> DataFrame:
    live = commits.filter(~F.col("tombstone"))
    curve = points.select("topic", "partition", F.col("timestamp").alias("t"), "end_offset",
                          F.lit(0).alias("kind"))
    at = live.select("topic", "partition", F.col("commit_time").alias("t"),
                     F.lit(None).cast("bigint").alias("end_offset"), F.lit(1).alias("kind"),
                     "group", "committed_offset", "leader_epoch", "metadata", "commit_time",
                     "log_partition", "log_offset")
    # As-of join: records at the same millisecond as a commit count as before it (kind 0 < 1).
    w = (Window.partitionBy("topic", "partition").orderBy("t", "kind")
         .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    joined = (curve.unionByName(at, allowMissingColumns=True)
              .withColumn("leo", F.max("end_offset").over(w))
              .filter(F.col("kind") == 1)
              .join(bounds.select("topic", "partition", "log_start_offset"),
                    ["topic", "partition"], "left")
              .withColumn("log_end_offset", F.coalesce("leo", "log_start_offset")))
    with_gen = _generation_at(joined, groups)
    return with_gen.select(
        "group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset",
        (F.col("log_end_offset") - F.col("committed_offset")).alias("lag"), "generation",
        "leader_epoch", "metadata", "log_partition", "log_offset")


def _generation_at(rows: DataFrame, groups: DataFrame) -> DataFrame:
    marks = groups.select("group", "log_partition", "log_offset",
                          F.when(F.col("tombstone"), F.lit(-1)).otherwise(F.col("generation"))
                          .alias("gen_mark"), F.lit(0).alias("is_row"))
    w = (Window.partitionBy("group").orderBy("log_partition", "log_offset", "is_row")
         .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    both = rows.withColumn("is_row", F.lit(1)).unionByName(marks, allowMissingColumns=True)
    gen = F.last("gen_mark", ignorenulls=True).over(w)
    return (both.withColumn("generation", F.when(gen >= 0, gen))
            .filter(F.col("is_row") == 1).drop("is_row", "gen_mark"))


def lag_over_time(commits: DataFrame, points: DataFrame, points_count: int = GRID_POINTS
                  ) -> DataFrame:
    """Lag of each group/partition on a time grid, from its first commit to the end of the data.

    Between commits the committed offset stays, while the log end keeps moving: this shows the
    lag of a consumer that stalls, which commit-time lag cannot.
    """
    live = commits.filter(~F.col("tombstone"))
    span = live.agg(F.min(_ms("commit_time")), F.max(_ms("commit_time"))).first()
    data_end = points.agg(F.max(_ms("timestamp"))).first()
    assert span is not None and data_end is not None  # an aggregate has exactly one row
    lo, hi = span
    data_hi = data_end[0]
    if lo is None:
        return live.select("group", "topic", "partition", F.col("commit_time").alias("time"),
                           "committed_offset", F.lit(None).cast("bigint").alias("log_end_offset"),
                           F.lit(None).cast("bigint").alias("lag")).limit(0)
    end = max(hi, data_hi or hi)
    step = max(1, -(-(end - lo) // points_count))
    keys = (live.groupBy("group", "topic", "partition")
            .agg(F.min(_ms("commit_time")).alias("first_ms")).withColumn("end_ms", F.lit(end)))
    # Grid times are aligned on multiples of the step, so groups line up in a sum.
    first = F.floor(F.col("first_ms") / step) * step + step
    grid = keys.select("group", "topic", "partition",
                       F.explode(F.sequence(first.cast("bigint"), F.col("end_ms") + step,
                                            F.lit(step).cast("bigint"))).alias("t"))
    grid = grid.select("group", "topic", "partition", F.timestamp_millis("t").alias("t"),
                       F.lit(1).alias("kind"))
    curve = points.select("topic", "partition", F.col("timestamp").alias("t"), "end_offset",
                          F.lit(0).alias("kind"))
    by_time = Window.orderBy("t", "kind").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    with_end = (curve.unionByName(grid, allowMissingColumns=True)
                .withColumn("leo", F.max("end_offset").over(by_time.partitionBy("topic", "partition")))
                .filter(F.col("kind") == 1).drop("end_offset"))
    marks = live.select("group", "topic", "partition", F.col("commit_time").alias("t"),
                        "committed_offset", F.lit(0).alias("kind"))
    committed = F.last("committed_offset", ignorenulls=True).over(
        by_time.partitionBy("group", "topic", "partition"))
    return (with_end.unionByName(marks, allowMissingColumns=True)
            .withColumn("committed", committed)
            .filter(F.col("kind") == 1)
            .select("group", "topic", "partition", F.col("t").alias("time"),
                    F.col("committed").alias("committed_offset"),
                    F.col("leo").alias("log_end_offset"),
                    (F.col("leo") - F.col("committed")).alias("lag")))


def current_lag(commits: DataFrame, bounds: DataFrame) -> DataFrame:
    """Last committed offset of each group/partition against the partition's final log end."""
    w = Window.partitionBy("group", "topic", "partition").orderBy(
        F.col("log_partition").desc(), F.col("log_offset").desc())
    last = (commits.withColumn("rank", F.row_number().over(w)).filter("rank = 1")
            .filter(~F.col("tombstone")))
    return (last.join(bounds, ["topic", "partition"], "left")
            .select("group", "topic", "partition", "committed_offset", "commit_time",
                    "log_end_offset", (F.col("log_end_offset") - F.col("committed_offset"))
                    .alias("lag")))


def commit_rates(commits: DataFrame, window: str) -> DataFrame:
    live = commits.filter(~F.col("tombstone"))
    seconds = (_ms("window.end") - _ms("window.start")) / 1000.0
    return (live.groupBy("group", F.window("commit_time", window))
            .agg(F.count(F.lit(1)).alias("offset_commits"),
                 F.countDistinct("commit_time").alias("commit_requests"),
                 F.countDistinct("topic", "partition").alias("partitions"))
            .select("group", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "offset_commits", "commit_requests",
                    "partitions", (F.col("offset_commits") / seconds).alias("commits_per_second")))


def rebalances(groups: DataFrame) -> DataFrame:
    w = Window.partitionBy("group").orderBy("log_partition", "log_offset")
    ids = F.transform("members", lambda m: m["member_id"])
    state = (F.when(F.col("tombstone"), F.lit("Dead"))
             .when(F.col("member_count") > 0, F.lit("Stable")).otherwise(F.lit("Empty")))
    g = (groups.withColumn("state", state).withColumn("member_ids", ids)
         .withColumn("prev_state", F.lag("state").over(w))
         .withColumn("previous_generation", F.lag("generation").over(w))
         .withColumn("prev_ids", F.lag("member_ids").over(w))
         .withColumn("prev_state_time", F.lag("state_time").over(w))
         .withColumn("prev_record_time", F.lag("record_time").over(w)))
    stable = F.col("state") == "Stable"
    after_stable = F.col("prev_state") == "Stable"
    since = F.when(stable & after_stable, F.col("state_time")).when(
        stable, F.coalesce("prev_state_time", "prev_record_time", "state_time"))
    return g.select(
        "group", "generation", "previous_generation", "state", "protocol_type", "protocol",
        "leader", "member_count",
        F.transform("members", lambda m: F.struct(
            m["member_id"].alias("member_id"), m["group_instance_id"].alias("group_instance_id"),
            m["client_id"].alias("client_id"), m["client_host"].alias("client_host"),
            m["assigned_partitions"].alias("assigned_partitions"))).alias("members"),
        F.array_except("member_ids", F.coalesce("prev_ids", F.array().cast("array<string>")))
        .alias("joined"),
        F.array_except(F.coalesce("prev_ids", F.array().cast("array<string>")), "member_ids")
        .alias("left"),
        "state_time", F.col("record_time").alias("stable_time"),
        since.alias("not_stable_since"),
        (_ms("record_time") - _ms(since)).alias("not_stable_ms"),
        F.when(stable, ~F.coalesce(after_stable, F.lit(False))).alias("not_stable_exact"),
        (_ms("record_time") - _ms("state_time")).alias("sync_ms"),
        "log_partition", "log_offset")


def read_share_state(spark: SparkSession, log_dirs: str) -> DataFrame:
    """Every ``__share_group_state`` record, decoded (``share_state.SCHEMA``)."""
    raw = (spark.read.format("kafkette").option("topics", share_state.SHARE_STATE_TOPIC)
           .load(log_dirs).filter(~F.col("aborted"))
           .select("partition", "offset", "timestamp", "key", "value"))
    return raw.mapInArrow(share_state.decode_arrow, share_state.DDL)


def share_lag(spark: SparkSession, records: DataFrame, bounds: DataFrame,
              names: dict[str, str]) -> DataFrame:
    """Per share-partition: its start offset, delivery-complete count, log end and lag (see
    the module docstring); topics named through ``names`` (topic id -> name)."""
    key = ["group", "topic_id", "partition"]
    position = F.struct("log_partition", "log_offset")
    last = records.groupBy(*key).agg(
        F.max_by("tombstone", position).alias("deleted"),
        F.max_by("delivery_complete_count", position).alias("delivery_complete_count"),
        F.max("record_time").alias("last_write_time"))
    starts = (records.filter(F.col("start_offset") >= 0).groupBy(*key)
              .agg(F.max_by("start_offset", position).alias("start_offset")))
    topics = spark.createDataFrame(sorted(names.items()), "topic_id string, topic string")
    delivered = F.greatest(F.coalesce("delivery_complete_count", F.lit(0)), F.lit(0))
    return (last.filter(~F.col("deleted")).join(starts, key).join(topics, "topic_id")
            .join(bounds.select("topic", "partition", "log_end_offset"),
                  ["topic", "partition"], "left")
            .select("group", "topic", "partition", "start_offset", "delivery_complete_count",
                    "log_end_offset",
                    F.greatest(F.col("log_end_offset") - F.col("start_offset") - delivered,
                               F.lit(0)).alias("lag"), "last_write_time"))


def build(spark: SparkSession, log_dirs: str, rate_window: str = "1 minute") -> Tables:
    commits, groups, decoded = read_offsets(spark, log_dirs)
    points = end_offset_points(spark, log_dirs).cache()
    bounds = log_end_offsets(points).cache()
    return Tables(
        commits=commits, group_metadata=groups, log_end_offsets=bounds,
        lag=lag_at_commits(commits, points, bounds, groups),
        lag_over_time=lag_over_time(commits, points),
        current_lag=current_lag(commits, bounds),
        commit_rates=commit_rates(commits, rate_window),
        rebalances=rebalances(groups),
        share_lag=share_lag(spark, read_share_state(spark, log_dirs), bounds,
                            share_state.topic_names(log_dirs)),
        cached=[decoded, points, bounds],
    )
