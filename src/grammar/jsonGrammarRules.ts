/**
 * Turns the GBNF that node-llama-cpp (3.22.1) writes for JSON into rules Maple can compose with
 * its own: one named rule that matches exactly one JSON value, nothing before or after it.
 */

/** The rule the returned GBNF defines; Maple's own rules never reuse node-llama-cpp's names. */
export const jsonValueRule = "maple-json";

/**
 * node-llama-cpp's numbers allow 16-digit exponents (`1e9999999` parses to Infinity) and
 * exponents on integers (`1e-5` is no integer). Maple's: at most two exponent digits, and plain
 * digits for integers.
 */
const integerRule = 'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15})';
const fractionalRule = 'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?';

/**
 * A character of a string with `minLength` / `maxLength`: none outside the Basic Multilingual
 * Plane, raw or as a surrogate escape. JSON Schema counts a string's length in code points,
 * JavaScript (and so zod, which the openai SDK's `parse` validates with) in UTF-16 units; without
 * astral characters the two agree, so the length holds for both.
 */
const boundedStringCharRule = String.raw`string-bmp-char-rule ::= [^"\\\x7F\x00-\x1F\U00010000-\U0010FFFF] | "\\" ["\\/bfnrt] | "\\u" ([0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})`;

/**
 * The converter's grammar (`LlamaJsonSchemaGrammar.grammar`): its `root` rule is the value
 * followed by `"\n\n\n\n" [\n]*` (node-llama-cpp stops generation on those newlines; Maple ends at
 * the end of the grammar instead).
 */
export function schemaGrammarRules(converterGbnf: string): string {
    const lines = converterGbnf.split("\n");
    const rootIndex = lines.findIndex((line) => line.startsWith("root ::= "));
    const trailer = ' "\\n\\n\\n\\n" [\\n]*';
    const root = lines[rootIndex];
    if (root === undefined || !root.endsWith(trailer)) {
        throw new Error("node-llama-cpp's JSON schema grammar no longer has the expected shape (root rule with a newline trailer)");
    }
    lines[rootIndex] = `${jsonValueRule} ::= ${root.slice("root ::= ".length, -trailer.length)}`;
    let boundedStrings = false;
    const rules = lines.map((line) => {
        if (line.startsWith("integer-number-rule ::= ")) return integerRule;
        if (line.startsWith("fractional-number-rule ::= ")) return fractionalRule;
        // `string-MIN-rule` and `string-MIN-MAX-rule`: the length-bounded strings.
        if (/^string-\d+(-\d+)?-rule ::= /.test(line)) {
            boundedStrings = true;
            return line.replace(/\bstring-char-rule\b/g, "string-bmp-char-rule");
        }
        return line;
    });
    if (boundedStrings) rules.push(boundedStringCharRule);
    return rules.join("\n");
}

/**
 * node-llama-cpp's `json.gbnf` (llama.cpp's, for `response_format: json_object`): `root ::= object`
 * becomes the named rule; its number's exponent is bounded as above.
 */
export function anyObjectGrammarRules(jsonGbnf: string): string {
    const replaced = jsonGbnf.replace(/^root\s*::=/m, `${jsonValueRule} ::=`);
    if (replaced === jsonGbnf) throw new Error("node-llama-cpp's json.gbnf no longer has a root rule");
    return replaced.replace(/\(\[eE\] \[-\+\]\? \[0-9\] \[1-9\]\{0,15\}\)\?/, "([eE] [-+]? [0-9]{1,2})?");
}
