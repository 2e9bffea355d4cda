// A decode loop on a native thread of its own (node-llama-cpp 3.22.1's addon source,
// llama/addon/AddonContext.{h,cpp}, applied after addonHunks.js). Every direct step is a hop: the
// pool thread finishes, the event loop wakes, JS queues the next step, the pool thread wakes
// (llama.cpp's decode thread asleep 0.24-0.40 ms a token on 2 cores, against llama-server's
// <= 0.06, whose decode loop samples and decodes the next token on its own thread).
//
// `startDecodeRun(steps, samplers, onEvent, waitMs)` starts such a loop for the listed sequences:
// [sequenceId, position, token, selfDecodes, credits] a step in `steps`, its sampler at the same
// index. The thread decodes the batch, samples each sequence, and decodes the sampled tokens next,
// as long as each may go on: not an end-of-generation token, `selfDecodes` left (the request's
// max tokens and the context), not released, and a credit, which JS gives (`decodeRunGrant`)
// once its consumer is done with the token before: so the thread is never more than one token
// ahead of the consumer, as JS's own direct steps are not. A sequence without a credit is waited
// for up to `waitMs`, then left out. `decodeRunRelease(sequenceId)` ends one sequence,
// `decodeRunStop()` all of them after the step in progress. Each step's outcome goes to `onEvent`
// on the main thread: rows [sequenceId, decodedToken, sampledToken (-1: none), goesOn] and an
// error per row (or undefined), a failure of the whole step, and whether the run ended (then
// the thread is gone). Upstream, node-llama-cpp's own batch loop could run on such a thread.
export const marker = "/* maple-patch: a decode loop on a native thread */";

export const decodeRunHeaderHunks = [{
    original: "class AddonContext : public Napi::ObjectWrap<AddonContext> {\n    public:\n",
    patched: `${marker}\nstruct MapleDecodeRun;\nvoid mapleRetireDecodeRunner(MapleDecodeRun* run);\n\n`
        + "class AddonContext : public Napi::ObjectWrap<AddonContext> {\n    public:\n"
        + "        MapleDecodeRun* decodeRun = nullptr;\n"
}, {
    original: "        Napi::Value DecodeStepsAndSample(const Napi::CallbackInfo& info);\n",
    patched: "        Napi::Value DecodeStepsAndSample(const Napi::CallbackInfo& info);\n"
        + "        Napi::Value StartDecodeRun(const Napi::CallbackInfo& info);\n"
        + "        Napi::Value DecodeRunGrant(const Napi::CallbackInfo& info);\n"
        + "        Napi::Value DecodeRunRelease(const Napi::CallbackInfo& info);\n"
        + "        Napi::Value DecodeRunStop(const Napi::CallbackInfo& info);\n"
}];

export const decodeRunSourceHunks = [{
    original: "Napi::Value AddonContext::DecodeStepsAndSample(const Napi::CallbackInfo& info) {\n",
    patched: `${marker}
#include <chrono>
#include <condition_variable>

struct MapleRunMember {
    int32_t sequenceId;
    llama_pos position;
    llama_token token;
    AddonSampler* sampler;
    int32_t selfDecodes;
    int32_t credits;
    bool released = false;
    bool active = true;
};

struct MapleDecodeRun;
static void mapleEndDecodeRun(MapleDecodeRun* run);

struct MapleRunEvent {
    std::vector<int32_t> rows;
    std::vector<std::string> errors;
    std::string failure;
    bool ended = false;
    // Set on the last event only: the run, ended on the main thread before JS hears of it.
    MapleDecodeRun* run = nullptr;
};

// One per context, made with its first run: its thread waits for the next run between them.
struct MapleDecodeRun {
    AddonContext* ctx;
    std::vector<MapleRunMember> members;
    int32_t waitMs = 0;
    std::mutex mutex;
    std::condition_variable changed;
    // Main thread only: a run was started and its last event has not come back yet.
    bool active = false;
    bool pending = false;
    bool quit = false;
    bool stopping = false;
    bool finished = true;
    Napi::ThreadSafeFunction events;
    std::thread thread;

    void serve() {
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(mutex);
                changed.wait(lock, [&] { return pending || quit; });
                if (!pending) return;
                pending = false;
            }
            loop();
        }
    }

    MapleRunMember* member(int32_t sequenceId) {
        for (auto& item : members) {
            if (item.sequenceId == sequenceId) return &item;
        }
        return nullptr;
    }

    // To the run's own events: once its last event is posted, the main thread may start the next
    // run, which replaces \`events\`.
    static void post(Napi::ThreadSafeFunction& runEvents, MapleRunEvent* event) {
        runEvents.NonBlockingCall(event, [](Napi::Env env, Napi::Function onEvent, MapleRunEvent* event) {
            const bool ended = event->ended;
            if (event->run != nullptr) mapleEndDecodeRun(event->run);
            Napi::Value rows = env.Undefined();
            Napi::Value errors = env.Undefined();
            if (!event->rows.empty()) {
                auto numbers = Napi::Int32Array::New(env, event->rows.size());
                std::copy(event->rows.begin(), event->rows.end(), numbers.Data());
                rows = numbers;
                bool anyError = false;
                for (const auto& error : event->errors) anyError = anyError || !error.empty();
                if (anyError) {
                    auto list = Napi::Array::New(env, event->errors.size());
                    for (uint32_t i = 0; i < event->errors.size(); i++) {
                        if (!event->errors[i].empty()) list.Set(i, Napi::String::New(env, event->errors[i]));
                    }
                    errors = list;
                }
            }
            Napi::Value failure = event->failure.empty() ? env.Undefined() : Napi::String::New(env, event->failure).As<Napi::Value>();
            delete event;
            onEvent.Call({rows, errors, failure, Napi::Boolean::New(env, ended)});
        });
    }

    void loop() {
        Napi::ThreadSafeFunction runEvents = events;
        llama_batch batch = llama_batch_init(members.size(), 0, 1);
        const llama_vocab* vocab = ctx->model->vocab;
        std::vector<size_t> stepped;
        std::vector<AddonPresample> samples;
        for (;;) {
            stepped.clear();
            common_batch_clear(batch);
            {
                std::lock_guard<std::mutex> lock(mutex);
                for (size_t i = 0; i < members.size(); i++) {
                    auto& item = members[i];
                    if (!item.active) continue;
                    common_batch_add(batch, item.token, item.position, { item.sequenceId }, true);
                    stepped.push_back(i);
                }
            }
            if (stepped.empty()) break;

            auto* event = new MapleRunEvent();
            ctx->sharedSamplerData.gotLogit = false;
            ctx->sharedSamplerData.hasLogits = false;
            int result = -1;
            try {
                result = llama_decode(ctx->ctx, batch);
                if (result == 0) llama_synchronize(ctx->ctx);
            } catch (const std::exception& e) {
                event->failure = e.what();
            } catch (...) {
                event->failure = "Unknown error when calling \\"llama_decode\\"";
            }
            if (result != 0) {
                if (event->failure.empty()) {
                    event->failure = result == 1
                        ? "could not find a KV slot for the batch (try reducing the size of the batch or increase the context)"
                        : "Eval has failed";
                }
                post(runEvents, event);
                break;
            }

            samples.clear();
            for (size_t k = 0; k < stepped.size(); k++) {
                samples.push_back({static_cast<int32_t>(k), members[stepped[k]].sampler});
                try {
                    presampleToken(ctx, samples.back());
                } catch (const std::exception& e) {
                    samples.back().error = e.what();
                } catch (...) {
                    samples.back().error = "Unknown error when calling \\"SampleToken\\"";
                }
            }

            std::unique_lock<std::mutex> lock(mutex);
            auto mayGoOn = [&](size_t k) {
                const auto& item = members[stepped[k]];
                const auto token = samples[k].token;
                return samples[k].error.empty() && token >= 0 && !llama_vocab_is_eog(vocab, token)
                    && item.selfDecodes > 0 && !item.released && !stopping;
            };
            // A consumer still busy with the token before is waited for, not decoded past.
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(waitMs);
            changed.wait_until(lock, deadline, [&] {
                for (size_t k = 0; k < stepped.size(); k++) {
                    if (mayGoOn(k) && members[stepped[k]].credits == 0) return false;
                }
                return true;
            });
            for (size_t k = 0; k < stepped.size(); k++) {
                auto& item = members[stepped[k]];
                const bool goesOn = mayGoOn(k) && item.credits > 0;
                event->rows.insert(event->rows.end(), {item.sequenceId, item.token, samples[k].token, goesOn ? 1 : 0});
                event->errors.push_back(samples[k].error);
                item.position += 1;
                if (goesOn) {
                    item.token = samples[k].token;
                    item.credits -= 1;
                    item.selfDecodes -= 1;
                } else {
                    item.active = false;
                }
            }
            lock.unlock();
            post(runEvents, event);
        }
        llama_batch_free(batch);
        {
            // Before the last event: after it, the next run's start sets it again.
            std::lock_guard<std::mutex> lock(mutex);
            finished = true;
            changed.notify_all();
        }
        auto* ended = new MapleRunEvent();
        ended->ended = true;
        ended->run = this;
        post(runEvents, ended);
        runEvents.Release();
    }

};

// The context is disposed (or freed): a run in progress stops after its step, the thread ends,
// and the runner goes now or, when the run's last event is still on its way, with it.
void mapleRetireDecodeRunner(MapleDecodeRun* run) {
    {
        std::unique_lock<std::mutex> lock(run->mutex);
        run->stopping = true;
        run->quit = true;
        run->changed.notify_all();
        run->changed.wait(lock, [&] { return run->finished && !run->pending; });
    }
    if (run->thread.joinable()) run->thread.join();
    if (!run->active) delete run;
}

// Called on the main thread with the run's last event, before JS sees it (JS may start the next
// run at once): the run's references go.
static void mapleEndDecodeRun(MapleDecodeRun* run) {
    AddonContext* context = run->ctx;
    for (auto& item : run->members) item.sampler->Unref();
    run->members.clear();
    run->active = false;
    if (run->quit) delete run;
    context->Unref();
}

Napi::Value AddonContext::StartDecodeRun(const Napi::CallbackInfo& info) {
    if (disposed || ctx == nullptr) {
        Napi::Error::New(info.Env(), "Context is disposed").ThrowAsJavaScriptException();
        return info.Env().Undefined();
    }
    if (decodeRun != nullptr && decodeRun->active) {
        Napi::Error::New(info.Env(), "A decode run is already in progress").ThrowAsJavaScriptException();
        return info.Env().Undefined();
    }
    const auto steps = info[0].As<Napi::Int32Array>();
    const auto samplers = info[1].As<Napi::Array>();
    const auto onEvent = info[2].As<Napi::Function>();
    const int32_t waitMs = info[3].As<Napi::Number>().Int32Value();
    if (samplers.Length() == 0 || steps.ElementLength() != samplers.Length() * 5 || samplers.Length() > context_params.n_batch) {
        Napi::RangeError::New(info.Env(), "Invalid steps").ThrowAsJavaScriptException();
        return info.Env().Undefined();
    }
    if (decodeRun == nullptr) {
        decodeRun = new MapleDecodeRun();
        decodeRun->ctx = this;
        MapleDecodeRun* runner = decodeRun;
        decodeRun->thread = std::thread([runner] { runner->serve(); });
    }
    MapleDecodeRun* run = decodeRun;
    run->members.clear();
    for (uint32_t i = 0; i < samplers.Length(); i++) {
        AddonSampler* sampler = Napi::ObjectWrap<AddonSampler>::Unwrap(samplers.Get(i).As<Napi::Object>());
        sampler->Ref();
        run->members.push_back({steps[i * 5], steps[i * 5 + 1], static_cast<llama_token>(steps[i * 5 + 2]), sampler, steps[i * 5 + 3], steps[i * 5 + 4]});
    }
    Ref();
    run->active = true;
    run->events = Napi::ThreadSafeFunction::New(info.Env(), onEvent, "mapleDecodeRun", 0, 1);
    {
        std::lock_guard<std::mutex> lock(run->mutex);
        run->waitMs = std::max(0, waitMs);
        run->stopping = false;
        run->finished = false;
        run->pending = true;
        run->changed.notify_all();
    }
    return info.Env().Undefined();
}

// A change to one sequence of the run in progress, under the run's lock; the thread is woken to see it.
static Napi::Value mapleChangeRunMember(MapleDecodeRun* run, const Napi::CallbackInfo& info, void (*change)(MapleRunMember&)) {
    if (run == nullptr || !run->active) return info.Env().Undefined();
    std::lock_guard<std::mutex> lock(run->mutex);
    auto* item = run->member(info[0].As<Napi::Number>().Int32Value());
    if (item != nullptr) {
        change(*item);
        run->changed.notify_all();
    }
    return info.Env().Undefined();
}

Napi::Value AddonContext::DecodeRunGrant(const Napi::CallbackInfo& info) {
    return mapleChangeRunMember(decodeRun, info, [](MapleRunMember& item) { item.credits += 1; });
}

Napi::Value AddonContext::DecodeRunRelease(const Napi::CallbackInfo& info) {
    return mapleChangeRunMember(decodeRun, info, [](MapleRunMember& item) { item.released = true; });
}

Napi::Value AddonContext::DecodeRunStop(const Napi::CallbackInfo& info) {
    if (decodeRun == nullptr || !decodeRun->active) return info.Env().Undefined();
    std::lock_guard<std::mutex> lock(decodeRun->mutex);
    decodeRun->stopping = true;
    decodeRun->changed.notify_all();
    return info.Env().Undefined();
}

Napi::Value AddonContext::DecodeStepsAndSample(const Napi::CallbackInfo& info) {
`
}, {
    original: "                InstanceMethod(\"decodeStepsAndSample\", &AddonContext::DecodeStepsAndSample),\n",
    patched: "                InstanceMethod(\"decodeStepsAndSample\", &AddonContext::DecodeStepsAndSample),\n"
        + "                InstanceMethod(\"startDecodeRun\", &AddonContext::StartDecodeRun),\n"
        + "                InstanceMethod(\"decodeRunGrant\", &AddonContext::DecodeRunGrant),\n"
        + "                InstanceMethod(\"decodeRunRelease\", &AddonContext::DecodeRunRelease),\n"
        + "                InstanceMethod(\"decodeRunStop\", &AddonContext::DecodeRunStop),\n"
}, {
    // A context disposed during a run: the thread finishes its step before the memory goes.
    original: "Napi::Value AddonContext::Dispose(const Napi::CallbackInfo& info) {\n    if (disposed) {\n        return info.Env().Undefined();\n    }\n",
    patched: "Napi::Value AddonContext::Dispose(const Napi::CallbackInfo& info) {\n    if (disposed) {\n        return info.Env().Undefined();\n    }\n"
        + `    ${marker}\n`
        + "    if (decodeRun != nullptr) {\n        mapleRetireDecodeRunner(decodeRun);\n        decodeRun = nullptr;\n    }\n"
}, {
    original: "AddonContext::~AddonContext() {\n",
    patched: "AddonContext::~AddonContext() {\n"
        + "    if (decodeRun != nullptr) {\n        mapleRetireDecodeRunner(decodeRun);\n        decodeRun = nullptr;\n    }\n"
}];
