// Patches of node-llama-cpp 3.22.1's dist/evaluator/LlamaContext/LlamaContext.js, each applied
// once (its marker says it is in) and checked to match exactly once.
import { marker as presamplingMarker } from "./addonHunks.js";

/**
 * A sampling error inside a decode batch was lost: LlamaContext.dispatchPendingBatch runs in
 * `void withLock(...)`, so when sampling fails (e.g. a grammar that a logit_bias leaves no token
 * to satisfy) the rejection is unhandled, the process exits, and the waiting request never
 * settles. Each failed sampling's error goes to its own sequence's pending decode, as
 * node-llama-cpp already does for decode errors, so the one request fails and the other
 * sequences in the batch carry on.
 */
const samplingErrors = {
    marker: "/* maple-patch: per-sequence sampling errors */",
    hunks: [{
        original: "                await Promise.all(afterDecodeActionResults);\n",
        patched: `                /* maple-patch: per-sequence sampling errors */
                const settledAfterDecodeActions = await Promise.allSettled(afterDecodeActionResults);
                settledAfterDecodeActions.forEach((settled, index) => {
                    if (settled.status === "rejected")
                        this._dispatchErrorForQueuedDecodesAndDequeue(new Set([afterDecodeActions[index].queuedDecode]), settled.reason);
                });
`
    }]
};

/**
 * The JS half of sampling inside the decode worker (addonHunks.js has the native half and why).
 * A sequence's plain evaluation (no probabilities or confidence asked for) gives its logit mapper
 * a `presample()` that applies the sampler's config and returns the native sampler; the batch
 * dispatch collects those of the batch's one-logit items, decodes with `decodeBatchAndSample`
 * when the addon has it, and hands each item its token instead of running its mapper. The config
 * is resolved before the decode rather than after it: the sequence is waiting on that decode, so
 * nothing it depends on (penalized tokens, grammar state, bias) can change in between. Without
 * the native method (a prebuilt addon that was not rebuilt) everything runs as before.
 */
const presampling = {
    marker: presamplingMarker,
    hunks: [{
        original: "                        await this._ctx.decodeBatch();\n                        consumerHandle?.dispose();\n",
        patched: `                        ${presamplingMarker}
                        const presampleItems = [];
                        if (typeof this._ctx.decodeBatchAndSample === "function") {
                            for (const action of afterDecodeActions) {
                                const presample = action.batchLogitIndexes.length === 1
                                    ? action.queuedDecode.logitDataMapper.presample
                                    : undefined;
                                let nativeSampler;
                                try {
                                    nativeSampler = presample?.();
                                }
                                catch {
                                    // its own mapper samples it after the decode, and reports the error there
                                }
                                if (nativeSampler == null)
                                    continue;
                                action.presampledIndex = presampleItems.length / 2;
                                presampleItems.push(action.batchLogitIndexes[0], nativeSampler);
                            }
                        }
                        if (presampleItems.length > 0) {
                            const presampled = await this._ctx.decodeBatchAndSample(presampleItems);
                            for (const action of afterDecodeActions) {
                                if (action.presampledIndex != null)
                                    action.presampledToken = presampled[action.presampledIndex];
                            }
                        }
                        else
                            await this._ctx.decodeBatch();
                        consumerHandle?.dispose();
`
    }, {
        original: "                    const mappedLogitValues = [];\n                    let promiseChain = undefined;\n",
        patched: `                    if (action.presampledIndex != null) {
                        if (action.presampledToken instanceof Error)
                            return Promise.reject(action.presampledToken);
                        finishAfterDecodeAction(action, [[action.batchLogitTokenIndexes[0] + action.firstTokenIndex, action.presampledToken]]);
                        return undefined;
                    }
                    const mappedLogitValues = [];
                    let promiseChain = undefined;
`
    }, {
        original: "                    const decodeResult = await this._decodeTokens(evalTokens, logitsArray, evaluationPriority, this._tokenMeter, contextShiftOptions, (batchLogitIndex) => {\n",
        patched: "                    const decodeResult = await this._decodeTokens(evalTokens, logitsArray, evaluationPriority, this._tokenMeter, contextShiftOptions, Object.assign((batchLogitIndex) => {\n"
    }, {
        original: `                            else
                                return this._context._ctx.sampleToken(batchLogitIndex, sampler._sampler);
                        });
                    }, this._takeIntervalCheckpointIfNeededAfterBatch);
`,
        patched: `                            else
                                return this._context._ctx.sampleToken(batchLogitIndex, sampler._sampler);
                        });
                    }, {
                        presample: (_noSampling || sampleProbabilities || sampleConfidence) ? undefined : () => {
                            if (sampler.disposed)
                                return undefined;
                            sampler.applyConfig(this._resolveSamplerConfig({
                                temperature,
                                minP,
                                topK,
                                topP,
                                seed,
                                xtc,
                                grammarEvaluationState,
                                repeatPenalty,
                                dryRepeatPenalty,
                                tokenBias
                            }));
                            return sampler._sampler;
                        }
                    }), this._takeIntervalCheckpointIfNeededAfterBatch);
`
    }, {
        original: "            return logitDataMapper(batchLogitIndex, currentTokenIndex + (contextStateTokenIndex - this._nextTokenIndex));\n        };\n",
        patched: "            return logitDataMapper(batchLogitIndex, currentTokenIndex + (contextStateTokenIndex - this._nextTokenIndex));\n        };\n"
            + "        normalizedLogitDataMapper.presample = logitDataMapper.presample;\n"
    }]
};

/**
 * A sequence's token list grew by copying: \`_decodeTokens\` sets \`_contextTokens\` to a concat of
 * it and the tokens just decoded, so every generated token copied the whole context on the event
 * loop, between a decode's end and the next decode's dispatch. On Node 20 that is 0.01 ms a token at
 * 4,000 tokens, 0.97 ms at 32,000 and 2.6 ms at 100,000 (an array of that size and its garbage).
 * Appended in place instead: every other assignment of \`_contextTokens\` in LlamaContext.js makes a
 * fresh array (slice, Array.from, []), it is already cut in place with \`splice\`, and the public
 * \`contextTokens\` hands out a copy, so nothing holds the array it grows.
 */
const contextTokensInPlace = {
    marker: "/* maple-patch: context tokens appended in place */",
    hunks: [{
        original: "            this._contextTokens = this._contextTokens.concat(tokensToDecode);\n",
        patched: `            /* maple-patch: context tokens appended in place */
            for (const token of tokensToDecode)
                this._contextTokens.push(token);
`
    }]
};

export const contextPatches = [samplingErrors, presampling, contextTokensInPlace];
