/**
 * Callbacks end to end through `serverless offline` with a real redis-server: a job on a function
 * topic names a callback URL; when it ends, the callback job on the webhook topic is POSTed to a
 * local receiver (test/support/receiver.ts), signed. It records each request's job id header and which
 * secrets its signature verifies with, so the test checks the body, that `x-dq-job-id` is the body's
 * `callbackId`, and that the webhook secret signed it and no other. Every
 * answer the client gets is checked against openapi.yaml (its `fetch` option). Waits are bounded
 * polls, never fixed sleeps.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DelayQueueClient, type CallbackBody, type Job } from '../../lib/client';
import { startOffline, type OfflineProcess } from '../support/offline';
import { checkingFetch, Contract } from '../support/openapi';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';
import { waitFor } from '../support/wait';

const SECRET = 'callbacks-e2e-secret';
const OTHER_SECRET = 'another-secret';

describe('callbacks through the stack', () => {
  const contract = new Contract();
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let queue: DelayQueueClient;
  let receiver: Receiver;
  let receiverUrl: string;
  const postsTo = (path: string) => receiver.deliveries.filter((p) => p.path === path);
  const jobIn = (topic: string, id: string, state: string) =>
    waitFor(`${topic}/${id} ${state}`, async () => {
      const job = await queue.get(topic, id);
      return job?.state === state ? job : undefined;
    });

  before(async () => {
    // it verifies each POST with SECRET and OTHER_SECRET (verifiedBy): a receiver knowing only the other refuses it
    receiver = await startReceiver(SECRET, OTHER_SECRET);
    receiverUrl = receiver.url;
    redisServer = await startRedis();
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: SECRET } });
    queue = new DelayQueueClient({
      baseUrl: offline.baseUrl,
      token: offline.token,
      fetch: checkingFetch(contract, offline.baseUrl),
    });
  });
  after(async () => {
    await offline?.stop();
    await receiver?.close();
    await redisServer?.stop();
  });

  it('a job on a function topic runs; its done callback is one signed POST naming the job, x-dq-job-id its callbackId', async () => {
    const id = `cb-done-${process.pid}`;
    const path = `/done/${id}`;
    const added = await queue.add({
      topic: 'example',
      id,
      delay: 0,
      body: { orderId: 1 },
      callback: { url: receiverUrl + path, on: ['done'] },
    });
    assert.deepEqual(added.callback, { topic: 'webhook', url: receiverUrl + path, on: ['done'] }, 'the webhook topic');
    const done = await jobIn('example', id, 'done');
    assert.equal(done.attempts, 1);

    const [post] = await waitFor('the callback POST', async () => (postsTo(path).length > 0 ? postsTo(path) : false));
    const body = JSON.parse(post!.body) as CallbackBody;
    assert.deepEqual(
      { ...body, endedAt: undefined },
      {
        callbackId: `example.${id}.done.${Date.parse(done.createdAt)}`,
        topic: 'example',
        id,
        outcome: 'done',
        attempts: 1,
        endedAt: undefined,
        lastError: null,
      },
    );
    assert.ok(Math.abs(Date.parse(body.endedAt) - Date.parse(done.updatedAt)) < 1000, 'ended when the job was done');
    assert.equal(post!.jobId, body.callbackId, 'the header is the id to deduplicate on');
    assert.equal(post!.topic, 'webhook');
    assert.equal(post!.verified, true, 'signed with the webhook secret');
    assert.deepEqual(post!.verifiedBy, [SECRET], 'and not with any other');

    // the callback job is a webhook job like any other: done once the receiver answered 2xx, delivered once
    const notice: Job = await jobIn('webhook', body.callbackId, 'done');
    assert.equal(notice.url, receiverUrl + path);
    assert.equal(notice.callback, undefined, 'a callback job notifies nothing itself');
    assert.equal(postsTo(path).length, 1, 'one POST for one end');
  });

  it('a put job that names only cancelled: its DELETE adds the callback job before it answers; the POST says cancelled', async () => {
    const id = `cb-cancel-${process.pid}`;
    const path = `/cancelled/${id}`;
    const { job, created } = await queue.put('example', id, {
      delay: 3600,
      callback: { topic: 'webhook', url: receiverUrl + path, on: ['cancelled'] },
    });
    assert.deepEqual([created, job.callback?.on], [true, ['cancelled']]);
    await queue.cancel('example', id);
    const callbackId = `example.${id}.cancelled.${Date.parse(job.createdAt)}`;
    assert.ok(await queue.get('webhook', callbackId), 'the DELETE added the callback job before it answered');
    const [post] = await waitFor('the cancel callback POST', async () =>
      postsTo(path).length > 0 ? postsTo(path) : false,
    );
    const body = JSON.parse(post!.body) as CallbackBody;
    assert.deepEqual([body.outcome, body.id, body.attempts, body.callbackId], ['cancelled', id, 0, callbackId]);
    assert.equal(post!.jobId, callbackId);
  });
});
