/**
 * The generation core: one request in (internal, camelCase, any wire format's), a typed stream of
 * parts out per choice. Wire formats (`openai/`, and the ones that follow) convert their request
 * into a `ChatGenerationRequest` or `CompletionGenerationRequest`, call a `start…` function, and
 * turn parts into their own events. See docs/core.md.
 */
export { answerConstraint } from "./answerConstraint.js";
export {
    countChatPromptTokens, startChatGeneration, startCompletionGeneration,
    type Generation, type GenerationOptions, type ServingModel
} from "./generation.js";
export { sumUsage, type FinishPart, type GenerationPart, type TokenLogprob, type TokenLogprobs, type Usage } from "./parts.js";
export type { ChatGenerationRequest, CompletionGenerationRequest, GenerationSettings } from "./request.js";
