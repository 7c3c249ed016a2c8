// Cancel, release and timeout reaching a running generate from other threads, the way the NAPI
// layer (napi/hmllm_napi.cpp) does it: an atomic cancel flag and a deadline read by should_stop
// on the worker, release() waiting for the worker to let go of the session before freeing it.
// Each case checks what the app sees (the request stops early with what it has, the session is
// freed); `hmbuild test --sanitize thread` runs the same cases under TSan, which checks the
// threads (the caller, the pool's leader and its helpers) share no unsynchronised memory.
// Needs HMLLM_TEST_MODEL (set by hmbuild test); without it the cases are skipped.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "hmllm/session.h"
#include "test_main.h"

namespace {

using Clock = std::chrono::steady_clock;

const char* test_model() {
    const char* p = std::getenv("HMLLM_TEST_MODEL");
    return p && *p ? p : nullptr;
}

bool skip_without_model() {
    if (test_model()) return false;
    std::printf("skip: HMLLM_TEST_MODEL is not set\n");
    return true;
}

// A prompt a base model continues for a long time (no end-of-generation within a few tokens).
constexpr const char* kPrompt = "Chapter 1. The history of the Roman Empire begins with";
constexpr int kMaxTokens = 200;

std::unique_ptr<hmllm::Session> open_session() {
    hmllm::SessionOptions so;
    so.context_size = 256;
    so.threads = 2;  // a leader and one helper: the pool's hand-offs are part of every token
    so.high_priority = false;
    std::unique_ptr<hmllm::Session> s;
    hmllm::Status st = hmllm::Session::open(test_model(), so, &s);
    if (!st.ok()) std::printf("cannot open %s: %s\n", test_model(), st.message.c_str());
    CHECK(st.ok());
    return s;
}

// What the NAPI layer keeps per session (Slot) and per request (Job), reduced to the fields the
// worker and the JS thread share.
struct Slot {
    std::unique_ptr<hmllm::Session> session;
    std::mutex mu;
    std::condition_variable idle;
    bool busy = false;
    bool released = false;
};

struct Job {
    std::atomic<bool> cancel{false};
    bool timed_out = false;  // written by the worker only, read after it is joined
    int timeout_ms = 3600000;  // no timeout unless a case sets one: sanitizers and a busy CI slow tokens down a lot
    // Pieces streamed so far: the test thread waits on it to know the request is really running.
    std::atomic<int> pieces{0};
    std::atomic<bool> finished{false};  // execute() has returned
    hmllm::Status status;
    hmllm::InferResult result;
    bool ran = false;
};

// napi execute(): take the session unless released, generate, let go and wake a releaser.
void execute(Slot* slot, Job* job) {
    {
        std::lock_guard<std::mutex> lock(slot->mu);
        if (slot->released || !slot->session) {
            job->cancel.store(true);
            return;
        }
        slot->busy = true;
    }
    job->ran = true;
    const auto deadline = Clock::now() + std::chrono::milliseconds(job->timeout_ms);
    hmllm::InferRequest req;
    req.max_tokens = kMaxTokens;
    req.should_stop = [job, deadline] {
        if (job->cancel.load()) return true;
        if (Clock::now() >= deadline) return job->timed_out = true;
        return false;
    };
    req.on_piece = [job](const std::string&) {
        job->pieces.fetch_add(1);
        return true;
    };
    job->status = slot->session->generate(kPrompt, req, &job->result);
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->busy = false;
    slot->idle.notify_all();
}

// napi Release(): mark released, cancel the running request, wait for the worker, free.
void release(Slot* slot, Job* running) {
    {
        std::lock_guard<std::mutex> lock(slot->mu);
        slot->released = true;
    }
    if (running) running->cancel.store(true);
    std::unique_lock<std::mutex> lock(slot->mu);
    slot->idle.wait(lock, [&] { return !slot->busy; });
    if (slot->session) slot->session->release();
}

// Queues execute() on a worker thread, as napi does, and returns the thread once the request has
// streamed `pieces` pieces (or has finished before that).
std::thread start_request(Slot* slot, Job* job, int pieces = 0) {
    std::thread worker([slot, job] {
        execute(slot, job);
        job->finished.store(true);
    });
    while (job->pieces.load() < pieces && !job->finished.load()) std::this_thread::yield();
    return worker;
}

bool stopped_early(const Job& job) {
    return job.status.ok() && job.result.generation.stop == hmllm::StopReason::Callback &&
           static_cast<int>(job.result.generation.tokens.size()) < kMaxTokens;
}

}  // namespace

TEST_CASE(cancel_from_another_thread_stops_a_running_generate_with_its_text) {
    if (skip_without_model()) return;
    Slot slot;
    slot.session = open_session();
    // Cancelled after 1, 2, 3 pieces in turn: the flag lands at different points of a token.
    for (int after = 1; after <= 3; ++after) {
        Job job;
        std::thread worker = start_request(&slot, &job, after);
        job.cancel.store(true);
        worker.join();
        CHECK(job.ran);
        CHECK(stopped_early(job));
        CHECK(!job.timed_out);
        CHECK(job.pieces.load() >= after);
        CHECK(!job.result.text.empty());  // what was generated before the cancel is kept
    }
    // The session serves the next request normally after a cancel.
    Job next;
    std::thread worker = start_request(&slot, &next, 1);
    next.cancel.store(true);
    worker.join();
    CHECK(stopped_early(next));
}

TEST_CASE(release_during_generate_waits_for_the_worker_then_frees_the_session) {
    if (skip_without_model()) return;
    Slot slot;
    slot.session = open_session();
    Job job;
    std::thread worker = start_request(&slot, &job, 1);
    std::thread releaser([&] { release(&slot, &job); });
    releaser.join();  // returns only once the worker has let go of the session
    CHECK(slot.session->released());
    CHECK(slot.session->model().mapping().data() == nullptr);  // unmapped now, not at destruction
    worker.join();
    CHECK(stopped_early(job));
    // A request submitted after the release never touches the session.
    Job late;
    start_request(&slot, &late).join();
    CHECK(!late.ran);
    CHECK(late.cancel.load());
}

TEST_CASE(release_racing_a_request_that_is_just_starting_never_frees_under_it) {
    if (skip_without_model()) return;
    // The release and the worker start together: whichever takes the lock first, the request
    // either never runs or stops early, and the session is freed only after it let go.
    for (int round = 0; round < 3; ++round) {
        Slot slot;
        slot.session = open_session();
        Job job;
        std::thread worker = start_request(&slot, &job);
        std::thread releaser([&] { release(&slot, &job); });
        releaser.join();
        worker.join();
        CHECK(slot.session->released());
        CHECK(!job.ran || stopped_early(job));
    }
}

TEST_CASE(a_timeout_stops_generate_and_returns_what_exists_flagged_as_timed_out) {
    if (skip_without_model()) return;
    Slot slot;
    slot.session = open_session();
    Job job;
    job.timeout_ms = 1;  // shorter than any prefill of a real model: the deadline passes mid-request
    start_request(&slot, &job).join();
    CHECK(job.timed_out);
    CHECK(stopped_early(job));
    CHECK(job.result.generation.tokens.size() <= 1);  // stopped before the second token
}
