// The kafkajs program of the compat suite; same contract as programs/pyclient.py:
//   node client.js metadata BOOTSTRAP TOPIC
//   node client.js produce  BOOTSTRAP TOPIC COUNT PREFIX PARTITIONS
//   node client.js consume  BOOTSTRAP TOPIC COUNT
//   node client.js member   BOOTSTRAP TOPIC GROUP SESSION_MS   (stdin: commit | close)
// NODE_PATH points at the node_modules the tests installed kafkajs into.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
const readline = require('readline');

const emit = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
const [cmd, bootstrap, topic, ...rest] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-compat', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 5, initialRetryTime: 100 } });
const text = (b) => (b === null || b === undefined ? null : b.toString());

async function metadata() {
  const admin = kafka.admin();
  await admin.connect();
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  const cluster = await admin.describeCluster();
  emit('metadata', { partitions: md.topics[0].partitions.length,
                     brokers: cluster.brokers.map((b) => [b.nodeId, b.host, b.port]),
                     controller: cluster.controller });
  await admin.disconnect();
}

async function produce() {
  const [count, prefix, partitions] = [Number(rest[0]), rest[1], Number(rest[2])];
  const producer = kafka.producer();
  await producer.connect();
  const byPartition = new Map();
  for (let i = 0; i < count; i++) {
    const p = i % partitions;
    if (!byPartition.has(p)) byPartition.set(p, []);
    byPartition.get(p).push({ key: `${prefix}-${i}`, value: `${prefix}-${i}`, partition: p });
  }
  for (const [p, messages] of byPartition) {
    const res = await producer.send({ topic, acks: -1, messages });
    const base = Number(res[0].baseOffset);
    messages.forEach((_, j) => emit('produced', { partition: p, offset: base + j }));
  }
  await producer.disconnect();
}

async function consume() {
  const count = Number(rest[0]);
  const consumer = kafka.consumer({ groupId: `kafkajs-read-${process.pid}` });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let seen = 0;
  await new Promise((resolve) => {
    consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
      emit('record', { partition, offset: Number(message.offset), key: text(message.key), value: text(message.value) });
      if (++seen >= count) resolve();
    } });
  });
  await consumer.disconnect();
}

async function member() {
  const [group, sessionMs] = [rest[0], Number(rest[1])];
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: sessionMs, rebalanceTimeout: 10000,
                                    heartbeatInterval: Math.max(Math.floor(sessionMs / 5), 50),
                                    maxWaitTimeInMs: 100 });
  const positions = new Map();
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    emit('assigned', { partitions: [...(e.payload.memberAssignment[topic] || [])].sort((a, b) => a - b) });
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
    positions.set(partition, Number(message.offset) + 1);
    emit('record', { partition, offset: Number(message.offset), key: text(message.key), value: text(message.value) });
  } });
  const lines = readline.createInterface({ input: process.stdin });
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await consumer.disconnect();
    emit('done');
    process.exit(0);
  };
  lines.on('line', async (line) => {
    const command = line.trim();
    if (command === 'commit') {
      const offsets = [...positions].map(([partition, off]) => ({ topic, partition, offset: String(off) }));
      await consumer.commitOffsets(offsets);
      emit('committed', { offsets: Object.fromEntries(positions) });
    } else if (command === 'close') {
      await close();
    }
  });
  lines.on('close', close);
}

const commands = { metadata, produce, consume, member };
commands[cmd]().then(() => { if (cmd !== 'member') { emit('done'); process.exit(0); } })
  .catch((err) => { process.stderr.write(`${err.stack || err}\n`); process.exit(1); });
