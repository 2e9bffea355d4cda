/**
 * The wire kit: what every wire format's request parser shares, so each rule is decided once.
 * A new wire format validates its body with `parseWire`, spreads `samplingWire.shape` into its
 * schema, resolves its tools with `selectTools`, and takes its conversation key from `conversationKey`.
 */
export { refuseGrammarWithAnswer } from "./answerConflict.js";
export { conversationKey, type ConversationKeyFields, type RequestHeaders } from "./conversationKey.js";
export { newId } from "./ids.js";
export { paramPath, parseWire } from "./parseWire.js";
export { reasoningSwitch, type ReasoningRequest } from "./reasoning.js";
export { maxStopStrings, resolveMaxTokens, samplingWire, toSamplingOptions, type SamplingDefaults, type SamplingWire } from "./sampling.js";
export { joinTextParts, partText, type TextPartRules } from "./textParts.js";
export { refuseDuplicateToolNames, selectTools, toolCallArguments, type ToolChoiceParams, type ToolSelection } from "./tools.js";
