// The native half of "sampling inside the decode worker" (node-llama-cpp 3.22.1's addon source,
// llama/addon/AddonContext.{h,cpp}). node-llama-cpp runs two jobs on libuv's pool per generated
// token: decodeBatch, then one sampleToken per sequence, each a hop from the pool thread to the
// event loop and back (~0.8 ms a token of idle decode thread on 2 cores; llama-server, which
// samples on its decode thread, 0.14 ms). The new `decodeBatchAndSample(items)` decodes the batch
// and then samples the listed [batchLogitIndex, sampler] pairs on the same pool thread, as the
// simple form of sampleToken would (no probabilities, confidence or logits), and resolves with one
// entry per pair: the token, -1 when the sampler left none, or an Error for that pair alone.
// `decodeStepsAndSample(steps, samplers)` is the same job for generation steps (one token a
// sequence), given as numbers: it fills the batch itself, in place of initBatch and addToBatch.
// Upstream, node-llama-cpp could do the same for every sampleToken without options.
export const marker = "/* maple-patch: sampling inside the decode worker */";

export const headerHunks = [{
    original: "        Napi::Value DecodeBatch(const Napi::CallbackInfo& info);\n",
    patched: "        Napi::Value DecodeBatch(const Napi::CallbackInfo& info);\n"
        + `        ${marker}\n`
        + "        Napi::Value DecodeBatchAndSample(const Napi::CallbackInfo& info);\n"
        + "        Napi::Value DecodeStepsAndSample(const Napi::CallbackInfo& info);\n"
}];

export const sourceHunks = [{
    // The decode worker says whether the batch was decoded, for a subclass to sample after it.
    original: "    public:\n        AddonContext* ctx;\n\n        AddonContextDecodeBatchWorker(const Napi::Env& env, AddonContext* ctx)\n",
    patched: "    public:\n        AddonContext* ctx;\n        bool decoded = false;\n\n        AddonContextDecodeBatchWorker(const Napi::Env& env, AddonContext* ctx)\n"
}, {
    original: "                llama_synchronize(ctx->ctx);\n            } catch (const std::exception& e) {\n                SetError(e.what());\n            } catch(...) {\n                SetError(\"Unknown error when calling \\\"llama_decode\\\"\");\n",
    patched: "                llama_synchronize(ctx->ctx);\n                decoded = true;\n            } catch (const std::exception& e) {\n                SetError(e.what());\n            } catch(...) {\n                SetError(\"Unknown error when calling \\\"llama_decode\\\"\");\n"
}, {
    original: "Napi::Value AddonContext::DecodeBatch(const Napi::CallbackInfo& info) {\n",
    patched: `${marker}
struct AddonPresample {
    int32_t batchLogitIndex;
    AddonSampler* sampler;
    llama_token token = -1;
    std::string error;
};

// AddonContextSampleTokenWorker::SampleToken without probabilities, confidence or logits.
static void presampleToken(AddonContext* ctx, AddonPresample& item) {
    item.sampler->rebuildChainIfNeeded();

    std::unique_lock<std::mutex> samplingLock(ctx->sharedSamplerData.mutex);
    if (!ctx->sharedSamplerData.gotLogit) {
        ctx->sharedSamplerData.hasLogits = llama_get_logits(ctx->ctx) != nullptr;
        ctx->sharedSamplerData.gotLogit = true;
    }

    if (!ctx->sharedSamplerData.hasLogits) {
        item.error = "This model does not support token generation";
        return;
    }

    llama_token_data_array cur_p;
    item.sampler->sampleAndReleaseLock(ctx->sharedSamplerData.mutex, samplingLock, ctx->ctx, item.batchLogitIndex, cur_p, false);

    if (cur_p.size == 0 || !(cur_p.selected >= 0 && cur_p.selected < (int32_t)cur_p.size)) {
        return;
    }

    const auto new_token_id = cur_p.data[cur_p.selected].id;
    try {
        item.sampler->acceptToken(new_token_id);
        item.token = new_token_id;
    } catch (const std::exception& e) {
        item.error = std::string("Failed to accept token in sampler: ") + e.what();
    } catch(...) {
        item.error = "Unknown error when calling \\"acceptToken\\"";
    }
}

class AddonContextDecodeBatchAndSampleWorker : public AddonContextDecodeBatchWorker {
    public:
        std::vector<AddonPresample> presamples;

        AddonContextDecodeBatchAndSampleWorker(const Napi::CallbackInfo& info, AddonContext* ctx)
            : AddonContextDecodeBatchWorker(info.Env(), ctx) {
            const auto items = info[0].As<Napi::Array>();
            for (uint32_t i = 0; i + 1 < items.Length(); i += 2) {
                AddonSampler* sampler = Napi::ObjectWrap<AddonSampler>::Unwrap(items.Get(i + 1).As<Napi::Object>());
                sampler->Ref();
                presamples.push_back({items.Get(i).As<Napi::Number>().Int32Value(), sampler});
            }
        }
        // decodeStepsAndSample(steps, samplers): the batch is the steps' tokens, filled here.
        AddonContextDecodeBatchAndSampleWorker(const Napi::Int32Array& steps, const Napi::Array& samplers, AddonContext* ctx)
            : AddonContextDecodeBatchWorker(steps.Env(), ctx) {
            const uint32_t count = samplers.Length();
            if (!ctx->has_batch || ctx->batch_n_tokens < static_cast<int32_t>(count)) {
                if (ctx->has_batch) {
                    llama_batch_free(ctx->batch);
                }
                ctx->batch = llama_batch_init(count, 0, 1);
                ctx->has_batch = true;
                ctx->batch_n_tokens = count;
                const uint64_t size = calculateBatchMemorySize(count, 0, 1);
                if (size > ctx->batchMemorySize) {
                    adjustNapiExternalMemoryAdd(steps.Env(), size - ctx->batchMemorySize);
                    ctx->batchMemorySize = size;
                }
            } else {
                common_batch_clear(ctx->batch);
            }
            for (uint32_t i = 0; i < count; i++) {
                common_batch_add(ctx->batch, static_cast<llama_token>(steps[i * 3 + 2]), steps[i * 3 + 1], { steps[i * 3] }, true);
                AddonSampler* sampler = Napi::ObjectWrap<AddonSampler>::Unwrap(samplers.Get(i).As<Napi::Object>());
                sampler->Ref();
                presamples.push_back({static_cast<int32_t>(i), sampler});
            }
        }
        ~AddonContextDecodeBatchAndSampleWorker() {
            for (auto& item : presamples) {
                item.sampler->Unref();
            }
        }

    protected:
        void Execute() override {
            AddonContextDecodeBatchWorker::Execute();
            if (!decoded) {
                return;
            }

            for (auto& item : presamples) {
                try {
                    presampleToken(ctx, item);
                } catch (const std::exception& e) {
                    item.error = e.what();
                } catch(...) {
                    item.error = "Unknown error when calling \\"SampleToken\\"";
                }
            }
        }
        void OnOK() override {
            const auto env = Env();
            auto results = Napi::Array::New(env, presamples.size());
            for (uint32_t i = 0; i < presamples.size(); i++) {
                const auto& item = presamples[i];
                if (!item.error.empty()) {
                    results.Set(i, Napi::Error::New(env, item.error).Value());
                } else {
                    results.Set(i, Napi::Number::New(env, item.token));
                }
            }
            deferred.Resolve(results);
        }
};

// The generation steps of several sequences, one token each: [sequenceId, position, token] per
// step in \`steps\` (an Int32Array), the step's sampler at its index in \`samplers\`. The same job as
// initBatch, addToBatch per step and decodeBatchAndSample, in one call: no batch reallocated and
// no typed array made per step.
Napi::Value AddonContext::DecodeStepsAndSample(const Napi::CallbackInfo& info) {
    if (disposed) {
        Napi::Error::New(info.Env(), "Context is disposed").ThrowAsJavaScriptException();
        return info.Env().Undefined();
    }
    const auto steps = info[0].As<Napi::Int32Array>();
    const auto samplers = info[1].As<Napi::Array>();
    if (samplers.Length() == 0 || steps.ElementLength() != samplers.Length() * 3 || samplers.Length() > context_params.n_batch) {
        Napi::RangeError::New(info.Env(), "Invalid steps").ThrowAsJavaScriptException();
        return info.Env().Undefined();
    }
    AddonContextDecodeBatchAndSampleWorker* worker = new AddonContextDecodeBatchAndSampleWorker(steps, samplers, this);
    worker->Queue();
    return worker->GetPromise();
}
Napi::Value AddonContext::DecodeBatchAndSample(const Napi::CallbackInfo& info) {
    AddonContextDecodeBatchAndSampleWorker* worker = new AddonContextDecodeBatchAndSampleWorker(info, this);
    worker->Queue();
    return worker->GetPromise();
}
Napi::Value AddonContext::DecodeBatch(const Napi::CallbackInfo& info) {
`
}, {
    original: "                InstanceMethod(\"decodeBatch\", &AddonContext::DecodeBatch),\n",
    patched: "                InstanceMethod(\"decodeBatch\", &AddonContext::DecodeBatch),\n"
        + "                InstanceMethod(\"decodeBatchAndSample\", &AddonContext::DecodeBatchAndSample),\n"
        + "                InstanceMethod(\"decodeStepsAndSample\", &AddonContext::DecodeStepsAndSample),\n"
}];
