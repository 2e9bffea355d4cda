// Candidate buffers reused across samplers (node-llama-cpp 3.22.1's addon source,
// llama/addon/AddonSampler.cpp). node-llama-cpp makes a new sampler for every evaluation, i.e. for
// every request, and its constructor sizes a buffer of one llama_token_data per vocabulary entry:
// 1.8 MB for Qwen3's 151,936 tokens, zero-filled on the event loop. Measured on `maple serve`
// (maple-preview twin), that fill and its page faults were ~10% of the main thread's time for a
// cached one-token completion, and a fresh process paid ~10 ms per sampler on this VM. A disposed
// sampler now hands its buffer to a small process-wide pool and a new one takes it from there, so
// after the first few requests none is allocated. Every sampling overwrites the entries it uses
// (setTokenCandidates sets curP.size and fills [0, size)), so a reused buffer's old contents are
// never read. Upstream, AddonSampler could keep the buffer per context instead.
export const marker = "/* maple-patch: candidate buffers reused */";

export const samplerHunks = [{
    original: "AddonSampler::AddonSampler(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AddonSampler>(info) {\n"
        + "    model = Napi::ObjectWrap<AddonModel>::Unwrap(info[0].As<Napi::Object>());\n"
        + "    model->Ref();\n"
        + "\n"
        + "    tokenCandidates.resize(llama_vocab_n_tokens(model->vocab));\n"
        + "    tokenCandidates.reserve(llama_vocab_n_tokens(model->vocab));\n"
        + "}\n",
    patched: `${marker}
// Allocated once and never freed: an AddonSampler finalized while the process exits must still find them.
static std::mutex& reusableCandidatesMutex = *new std::mutex();
static std::vector<std::vector<llama_token_data>>& reusableCandidates = *new std::vector<std::vector<llama_token_data>>();
static constexpr size_t maxReusableCandidates = 16;

AddonSampler::AddonSampler(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AddonSampler>(info) {
    model = Napi::ObjectWrap<AddonModel>::Unwrap(info[0].As<Napi::Object>());
    model->Ref();

    {
        std::lock_guard<std::mutex> lock(reusableCandidatesMutex);
        if (!reusableCandidates.empty()) {
            tokenCandidates.swap(reusableCandidates.back());
            reusableCandidates.pop_back();
        }
    }
    tokenCandidates.resize(llama_vocab_n_tokens(model->vocab));
}
`
}, {
    original: "    disposed = true;\n\n    model->Unref();\n    freeChain();\n",
    patched: "    disposed = true;\n\n"
        + "    if (tokenCandidates.capacity() > 0) {\n"
        + "        std::lock_guard<std::mutex> lock(reusableCandidatesMutex);\n"
        + "        if (reusableCandidates.size() < maxReusableCandidates) {\n"
        + "            reusableCandidates.push_back(std::move(tokenCandidates));\n"
        + "        }\n"
        + "    }\n"
        + "    std::vector<llama_token_data>().swap(tokenCandidates);\n\n"
        + "    model->Unref();\n    freeChain();\n"
}];
