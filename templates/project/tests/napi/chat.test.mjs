// chatAsync and InferenceService.chat in a real Node.js (host, or aarch64 under qemu) with the real
// Gemma 3 270M and its chat format (gemma_chat_format.json: what `hmbuild chat-template MODEL.gguf
// --template gemma --json` compiles for it). The test model is a base model: it never writes
// <end_of_turn> itself, so its answers end at maxTokens or at a stop string given here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadLibrary } from './load_library.mjs';
import { etsLoader } from '../arkts/load_ets.mjs';
import { TestPlatform } from '../arkts/TestPlatform.mjs';

const lib = loadLibrary();
const model = process.env.HMBUILD_TEST_MODEL;
const needsModel = { skip: model ? false : 'HMBUILD_TEST_MODEL is not set' };
const chatFormat = readFileSync(new URL('./gemma_chat_format.json', import.meta.url), 'utf8');
const small = { contextSize: 256, threads: 2, chatFormat };
const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });

async function rejectsWithCode(promise, code, mentions) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code);
    assert.ok(err instanceof TypeError, `expected a TypeError, got ${err}`);
    if (mentions) assert.match(err.message, mentions);
    return true;
  });
}

function throwsInvalid(fn, mentions) {
  assert.throws(fn, (err) => err instanceof TypeError && err.code === 'INVALID_ARGUMENT' && mentions.test(err.message));
}

test('chatAsync streams the answer in order and resolves what ended it', needsModel, async () => {
  const id = lib.init(model, small);
  const pieces = [];
  const r = await lib.chatAsync(id, [{ role: 'system', content: 'Be brief.' }, user('Say hi.')],
    { maxTokens: 6, onToken: (p) => pieces.push(p) });
  assert.equal(typeof r.text, 'string');
  assert.ok(pieces.length >= 2);
  assert.equal(pieces.join(''), r.text);
  assert.equal(r.stop, 'max_tokens');
  assert.equal(r.outputTokens, 6);
  assert.ok(!r.text.includes('<end_of_turn>') && !r.text.includes('<start_of_turn>'));
  const s = lib.stats(id);
  assert.equal(s.inputTokens, r.promptTokens);
  assert.equal(s.outputTokens, 6);
  lib.release(id);
});

test('a stop string ends the answer, is not in it, and is reported', needsModel, async () => {
  const id = lib.init(model, small);
  // The base model answers "Hi" with a line and then repeats it (measured); the newline stops it.
  const r = await lib.chatAsync(id, [user('Hi')], { maxTokens: 24, stop: ['\n'] });
  assert.equal(r.stop, '\n');
  assert.ok(!r.text.includes('\n') && r.outputTokens < 24);
  lib.release(id);
});

test('the next turn prefills only what is new: the earlier turns come from the KV cache', needsModel, async () => {
  const id = lib.init(model, small);
  const first = await lib.chatAsync(id, [user('Name a fruit.')], { maxTokens: 4 });
  const second = await lib.chatAsync(id, [user('Name a fruit.'), assistant(first.text), user('Another one.')],
    { maxTokens: 4 });
  assert.ok(second.reusedTokens >= first.promptTokens, `${second.reusedTokens} reused of ${first.promptTokens}`);
  assert.ok(second.promptTokens > second.reusedTokens);
  lib.release(id);
});

test('chat and infer share one queue: ten chats with maxPending 3, six are BUSY', needsModel, async () => {
  const id = lib.init(model, { ...small, maxPending: 3 });
  const results = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) => (i % 2 ? lib.chatAsync(id, [user('Hi')], { maxTokens: 1 })
      : lib.inferAsync(id, new TextEncoder().encode('Hi').buffer, { maxTokens: 1 }))));
  assert.equal(results.filter((r) => r.status === 'rejected' && r.reason.code === 'BUSY').length, 6);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 4);
  lib.release(id);
});

test('a chat past its timeout resolves with what it has, stop timeout, counted as degraded', needsModel, async () => {
  const id = lib.init(model, small);
  const r = await lib.chatAsync(id, [user('Count to fifty.')], { maxTokens: 100, timeoutMs: 1 });
  assert.equal(r.stop, 'timeout');
  assert.ok(r.outputTokens < 100);
  assert.equal(lib.stats(id).degraded, 'timeout');
  lib.release(id);
});

test('cancel stops a running chat with CANCELLED', needsModel, async () => {
  const id = lib.init(model, small);
  let n = 0;
  const pending = lib.chatAsync(id, [user('Count to fifty.')], { maxTokens: 100, onToken: () => { if (++n === 1) lib.cancel(id); } });
  await assert.rejects(pending, (err) => err.code === 'CANCELLED');
  lib.release(id);
});

test('bad messages throw or reject with INVALID_ARGUMENT, never crash', needsModel, async () => {
  const id = lib.init(model, small);
  // The shape, at once.
  throwsInvalid(() => lib.chatAsync(id, 'hi'), /messages must be an array/);
  throwsInvalid(() => lib.chatAsync(id, [user(5)]), /messages\[0\]\.content must be a string/);
  throwsInvalid(() => lib.chatAsync(id, [{ content: 'x' }]), /messages\[0\] must be an object with a role and a content/);
  throwsInvalid(() => lib.chatAsync(id, [null]), /messages\[0\] must be an object/);
  throwsInvalid(() => lib.chatAsync(id, [{ role: 1, content: 'x' }]), /messages\[0\]\.role must be a string/);
  throwsInvalid(() => lib.chatAsync(id), /session and messages are required/);
  throwsInvalid(() => lib.chatAsync(id, [user('x')], { maxTokens: 0 }), /maxTokens/);
  // What the chat format refuses, as a rejection.
  await rejectsWithCode(lib.chatAsync(id, [{ role: 'robot', content: 'x' }]), 'INVALID_ARGUMENT', /unknown role 'robot'/);
  await rejectsWithCode(lib.chatAsync(id, [user('a'), user('b')]), 'INVALID_ARGUMENT', /message 2 is a user message/);
  await rejectsWithCode(lib.chatAsync(id, [assistant('a')]), 'INVALID_ARGUMENT', /message 1 is an assistant message/);
  await rejectsWithCode(lib.chatAsync(id, [user('a'), { role: 'system', content: 's' }]), 'INVALID_ARGUMENT', /may only come first/);
  await rejectsWithCode(lib.chatAsync(id, []), 'INVALID_ARGUMENT', /non-empty/);
  // Too long for the context, with the numbers an app needs to drop turns.
  await assert.rejects(lib.chatAsync(id, [user('word '.repeat(300))], { maxTokens: 8 }), (err) => {
    assert.equal(err.code, 'INVALID_ARGUMENT');
    assert.match(err.message, /does not fit the context of 256 tokens/);
    assert.ok(err.promptTokens > 256 && err.contextSize === 256);
    return true;
  });
  // The session still works.
  assert.equal((await lib.chatAsync(id, [user('Hi')], { maxTokens: 2 })).outputTokens, 2);
  lib.release(id);
  await assert.rejects(async () => lib.chatAsync(id, [user('Hi')]), (err) => err.code === 'RELEASED');
});

test('a session without a chat format rejects naming the fix; a bad format is refused by init', needsModel, async () => {
  const id = lib.init(model, { contextSize: 64, threads: 2 });
  await rejectsWithCode(lib.chatAsync(id, [user('Hi')], { maxTokens: 2 }), 'INVALID_ARGUMENT', /InitOptions\.chatFormat/);
  lib.release(id);
  const v2 = chatFormat.replace('"version": 1', '"version": 2');
  throwsInvalid(() => lib.init(model, { ...small, chatFormat: v2 }), /version is 2, not 1/);
  throwsInvalid(() => lib.init(model, { ...small, chatFormat: '{"format": "hmbuild-chat",' }), /not valid JSON/);
  throwsInvalid(() => lib.init(model, { ...small, chatFormat: 7 }), /chatFormat must be/);
});

// ---- InferenceService.chat: the conversation kept by the ArkTS wrapper

const load = etsLoader(lib);
const { InferenceService, ServiceError } = load('InferenceService');

function chatService(contextSize) {
  const s = new InferenceService(new TestPlatform());
  s.init({ modelDir: dirname(model ?? '/x/m.gguf'), modelPath: model, threads: 2, timeoutMs: 600000, chatFormat,
           deviceClasses: [{ name: 'test', minTotalRamGb: 0, modelFile: 'm.gguf', contextSize, kvCacheType: 'f16',
                             minAvailableMb: 0 }] });
  return s;
}

test('InferenceService.chat keeps the conversation and reuses the KV cache of the turns seen', needsModel, async () => {
  const s = chatService(256);
  const a = await s.chat([{ role: 'system', content: 'Be brief.' }, user('Name a fruit.')], { maxTokens: 4 });
  const b = await s.chat([user('Another one.')], { maxTokens: 4 });
  assert.deepEqual(s.history().map((m) => m.role), ['system', 'user', 'assistant', 'user', 'assistant']);
  assert.equal(s.history()[2].content, a.text);
  assert.ok(b.reusedTokens >= a.promptTokens, `${b.reusedTokens} reused of ${a.promptTokens}`);
  assert.equal(b.droppedMessages, 0);
  assert.equal(s.metrics().requests, 2);
  // A refused message leaves the conversation as it was.
  await assert.rejects(s.chat([assistant('x')], { maxTokens: 2 }), (err) => err instanceof ServiceError && err.code === 'INVALID_ARGUMENT');
  assert.equal(s.history().length, 5);
  s.resetConversation();
  assert.equal(s.history().length, 0);
  s.release();
});

test('InferenceService.chat drops the oldest turns, never the system message, when the context fills', needsModel, async () => {
  const s = chatService(128);
  const long = 'Tell me more about the history of the city and its old harbour, please.';
  await s.chat([{ role: 'system', content: 'Be brief.' }, user(long)], { maxTokens: 12 });
  let dropped = 0;
  for (let i = 0; i < 4 && dropped === 0; i++) dropped = (await s.chat([user(long)], { maxTokens: 12 })).droppedMessages;
  assert.ok(dropped >= 2, 'the conversation never had to be trimmed');
  const h = s.history();
  assert.equal(h[0].role, 'system');
  assert.equal(h[1].role, 'user');  // the template needs a user message first
  assert.ok(h.every((m, i) => i === 0 || m.role === (i % 2 ? 'user' : 'assistant')));
  // A message that alone does not fit is refused, and the conversation kept.
  const before = s.history().length;
  await assert.rejects(s.chat([user('word '.repeat(200))], { maxTokens: 12 }),
    (err) => err instanceof ServiceError && err.code === 'INVALID_ARGUMENT' && /does not fit the context of 128/.test(err.message));
  assert.equal(s.history().length, before);
  s.release();
});

// ---- SmolLM2-135M-Instruct: an instruct model that ends its own turn. HMBUILD_CHAT_TEST_MODEL is the
// file `hmbuild fetch-model smollm2-135m-instruct` caches (hmbuild test passes it when it is there);
// smollm2_chat_format.json is what `hmbuild chat-template MODEL.gguf --json` compiles from the
// ChatML template in that file. Greedy, its answer to "Hi!" ends at <|im_end|> after 9 tokens
// (llama.cpp's too: tests/fixtures/llama_cpp/smollm2.json in hmbuild's repository).

const chatModel = process.env.HMBUILD_CHAT_TEST_MODEL;
const needsChatModel = { skip: chatModel ? false : 'HMBUILD_CHAT_TEST_MODEL is not set (hmbuild fetch-model smollm2-135m-instruct)' };
const smolFormat = readFileSync(new URL('./smollm2_chat_format.json', import.meta.url), 'utf8');
// No deadline: under qemu -cpu cortex-a53 a whole answer takes longer than the 15 s default, and
// these tests are about what ends it.
const smol = { contextSize: 256, threads: 2, chatFormat: smolFormat, timeoutMs: 600000 };

test('chatAsync: SmolLM2 ends its answer itself, stop <|im_end|>, long before maxTokens', needsChatModel, async () => {
  const id = lib.init(chatModel, smol);
  const pieces = [];
  const r = await lib.chatAsync(id, [user('Hi!')], { maxTokens: 48, onToken: (p) => pieces.push(p) });
  assert.equal(r.stop, '<|im_end|>');
  assert.ok(r.outputTokens > 0 && r.outputTokens < 48, `${r.outputTokens} tokens`);
  assert.ok(r.text.length > 0 && !r.text.includes('<|im_end|>') && !r.text.includes('<|im_start|>'), r.text);
  assert.equal(pieces.join(''), r.text);
  // The next turn builds on the ended one: its tokens (and the <|im_end|> the format writes after
  // it) come from the KV cache.
  const next = await lib.chatAsync(id, [user('Hi!'), assistant(r.text), user('What is 2+2?')], { maxTokens: 48 });
  assert.equal(next.stop, '<|im_end|>');
  assert.ok(next.reusedTokens >= r.promptTokens, `${next.reusedTokens} reused of ${r.promptTokens}`);
  lib.release(id);
});

test('InferenceService.chat: SmolLM2 ends its turn itself and the conversation goes on', needsChatModel, async () => {
  const s = new InferenceService(new TestPlatform());
  s.init({ modelDir: dirname(chatModel), modelPath: chatModel, threads: 2, timeoutMs: 600000, chatFormat: smolFormat,
           deviceClasses: [{ name: 'test', minTotalRamGb: 0, modelFile: 'm.gguf', contextSize: 256, kvCacheType: 'f16',
                             minAvailableMb: 0 }] });
  const a = await s.chat([user('Hi!')], { maxTokens: 48 });
  assert.equal(a.stop, '<|im_end|>');  // not max_tokens: the model ended its turn
  assert.ok(a.text.length > 0 && !a.text.includes('<|im_end|>'), a.text);
  const b = await s.chat([user('What is 2+2?')], { maxTokens: 48 });
  assert.equal(b.stop, '<|im_end|>');
  assert.deepEqual(s.history().map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
  assert.equal(s.history()[1].content, a.text);
  s.release();
});
