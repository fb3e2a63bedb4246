// Variables serverless.yml cannot express by itself. `queueConfig` turns `custom.queue` (topics
// and limits, declared once) into the JSON string the Lambdas read from DQ_CONFIG, adding to each
// topic with a handler that function's timeout (`handlerTimeout`, seconds): lib/core/queue-config.ts refuses
// a ttr longer than the handler can run.
module.exports.queueConfig = async ({ resolveVariable }) => {
  const queue = await resolveVariable('self:custom.queue');
  const fallback = (await resolveVariable('self:provider.timeout, 6')) ?? 6;
  const topics = {};
  for (const [name, topic] of Object.entries(queue.topics ?? {})) {
    if (topic && typeof topic === 'object' && typeof topic.handler === 'string') {
      const timeout = await resolveVariable(`self:functions.${topic.handler}.timeout, ${Number(fallback)}`);
      topics[name] = { ...topic, handlerTimeout: Number(timeout) };
    } else {
      topics[name] = topic;
    }
  }
  return JSON.stringify({ ...queue, topics });
};
