// A persistent ggml threadpool per context (node-llama-cpp 3.22.1's addon source,
// llama/addon/AddonContext.{h,cpp}). node-llama-cpp attaches no threadpool to its llama_context,
// and ggml's CPU backend then makes a threadpool for every graph it computes and joins it after:
// with 2 threads, one thread created and ended per generated token (strace: 128 clone3 calls for
// 128 tokens). Measured on the qwen3-tiny twin, 2 threads, one stream: 84-102 tok/s with that,
// 180-243 with a pool kept per context. llama-server and llama-bench attach one pool when the
// context is made (common.cpp's common_threadpools::init). Their workers poll for the next graph
// before they sleep (ggml's default, poll 50: ~0.1 s of spinning after every graph); these sleep
// at once (poll 0), because a Maple process shares its cores with its event loop and with other
// models' contexts, which a spinning worker would take them from. Upstream, node-llama-cpp could
// attach it in AddonContext.
export const marker = "/* maple-patch: a persistent ggml threadpool per context */";

export const threadpoolHeaderHunks = [{
    original: "        llama_context* ctx = nullptr;\n",
    patched: "        llama_context* ctx = nullptr;\n"
        + `        ${marker}\n`
        + "        ggml_threadpool_t threadpool = nullptr;\n"
        + "        int32_t threadpoolThreads = 0;\n"
}];

export const threadpoolSourceHunks = [{
    original: "#include \"AddonContext.h\"\n",
    patched: `#include "AddonContext.h"
#include "ggml-cpu.h"

${marker}
// The CPU backend is loaded at run time (one libggml-cpu-*.so per CPU), so its threadpool
// functions are looked up through its registry, as common.cpp does.
struct MapleThreadpoolApi {
    decltype(ggml_threadpool_new)* create = nullptr;
    decltype(ggml_threadpool_free)* release = nullptr;
};

static MapleThreadpoolApi mapleThreadpoolApi() {
    MapleThreadpoolApi api;
    auto* cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) return api;
    auto* reg = ggml_backend_dev_backend_reg(cpu);
    api.create = (decltype(ggml_threadpool_new)*) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    api.release = (decltype(ggml_threadpool_free)*) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
    return api;
}

// Only while no graph runs on the context: after it is made, before a batch, or once it is freed.
static void mapleFreeThreadpool(AddonContext* context) {
    if (context->threadpool == nullptr) return;
    if (context->ctx != nullptr) llama_detach_threadpool(context->ctx);
    auto api = mapleThreadpoolApi();
    if (api.release != nullptr) api.release(context->threadpool);
    context->threadpool = nullptr;
    context->threadpoolThreads = 0;
}

// A pool of at least \`threads\` threads; fewer are used when llama_set_n_threads asks for fewer.
// Without the CPU backend's functions the context keeps ggml's pool per graph.
static void mapleEnsureThreadpool(AddonContext* context, int32_t threads) {
    if (context->ctx == nullptr || threads <= 0 || context->threadpoolThreads >= threads) return;
    mapleFreeThreadpool(context);
    auto api = mapleThreadpoolApi();
    if (api.create == nullptr || api.release == nullptr) return;
    ggml_threadpool_params params = ggml_threadpool_params_default(threads);
    params.poll = 0; // see the top of threadpoolHunks.js
    context->threadpool = api.create(&params);
    if (context->threadpool == nullptr) return;
    context->threadpoolThreads = threads;
    llama_attach_threadpool(context->ctx, context->threadpool, nullptr);
}
`
}, {
    original: "                context->contextLoaded = context->ctx != nullptr;\n",
    patched: "                context->contextLoaded = context->ctx != nullptr;\n"
        + "                if (context->contextLoaded) mapleEnsureThreadpool(context, std::max(context->context_params.n_threads, context->context_params.n_threads_batch));\n"
}, {
    original: "        llama_set_n_threads(ctx, resolvedThreads, resolvedThreads);\n",
    patched: "        mapleEnsureThreadpool(this, resolvedThreads);\n"
        + "        llama_set_n_threads(ctx, resolvedThreads, resolvedThreads);\n"
}, {
    original: "        llama_free(currentCtx);\n",
    patched: "        llama_free(currentCtx);\n"
        + "        mapleFreeThreadpool(this);\n"
}];
