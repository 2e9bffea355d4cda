import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { InvalidGrammarError } from "../errors.js";
import { anyObjectGrammarRules, schemaGrammarRules } from "../grammar/jsonGrammarRules.js";
import { LruCache } from "../lruCache.js";
import type { EngineGrammar, GrammarJsonSchema } from "./types.js";

/** A grammar compiled by llama.cpp; each generation gets its own evaluation state from it. */
export class CompiledGrammar implements EngineGrammar {
    constructor(readonly source: string, readonly grammar: LlamaGrammar) {}
}

/** Compiled grammars kept for reuse (clients tend to send the same schema or grammar every time). */
const grammarCacheSize = 64;

/** Compiled GBNF grammars by their text, and JSON-schema grammar rules by their schema. */
export class GrammarCache {
    private readonly compiled = new LruCache<string, CompiledGrammar>(grammarCacheSize);
    private readonly jsonRules = new LruCache<string, string>(grammarCacheSize);

    constructor(private readonly llama: Llama) {}

    async compile(gbnf: string): Promise<CompiledGrammar> {
        const cached = this.compiled.get(gbnf);
        if (cached !== undefined) return cached;
        let compiled: CompiledGrammar;
        try {
            compiled = new CompiledGrammar(gbnf, await this.llama.createGrammar({ grammar: gbnf }));
        } catch (error) {
            throw new InvalidGrammarError((error as Error).message);
        }
        this.compiled.set(gbnf, compiled);
        return compiled;
    }

    async jsonGrammarRules(schema: GrammarJsonSchema | undefined): Promise<string> {
        const key = JSON.stringify(schema ?? null);
        let rules = this.jsonRules.get(key);
        if (rules === undefined) {
            if (schema === undefined) rules = anyObjectGrammarRules((await this.llama.getGrammarFor("json")).grammar);
            else {
                // The converter's schema type is a generic tree of its own keywords, which GrammarJsonSchema holds.
                const grammar = await this.llama.createGrammarForJsonSchema(schema as unknown as Parameters<Llama["createGrammarForJsonSchema"]>[0]);
                rules = schemaGrammarRules(grammar.grammar);
            }
            this.jsonRules.set(key, rules);
        }
        return rules;
    }
}
