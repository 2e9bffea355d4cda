import { isUtf8 } from "node:buffer";
import type { FastifyInstance } from "fastify";
import { InvalidRequestError, UnsupportedMediaTypeError } from "../errors.js";
import { paramPath } from "../wire/parseWire.js";

/**
 * Deepest nesting of arrays and objects a body may have: 128, serde_json's default recursion
 * limit. A JSON Schema in `tools[].function.parameters` spends two levels per schema level, so
 * this leaves room for about 60 of them; zod and the chat template's `tojson` recurse over what
 * gets through, and must not run out of stack (10k levels did, inside the template).
 */
export const maxJsonDepth = 128;

/** A UTF-16 code unit of a surrogate pair without its partner: not a Unicode character. */
const loneSurrogate = /\p{Cs}/u;

/**
 * The only body parser: `application/json` in UTF-8, read as bytes and checked before anything
 * downstream sees it. Any other Content-Type (and none, with a body) is refused with 415 by
 * Fastify, which finds no parser for it: text/plain is not JSON.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
        try {
            done(null, parseJsonBody(request.headers["content-type"], body as Buffer));
        } catch (error) {
            done(error as Error, undefined);
        }
    });
}

/**
 * A request body → its JSON value, or a 4xx naming what is wrong: a charset other than UTF-8
 * (415), no body, bytes that are not UTF-8, text that is not JSON, nesting deeper than
 * {@link maxJsonDepth}, a string or key with a lone surrogate (`"\ud800"`: valid JSON escapes,
 * but not text a tokenizer can take), or a `__proto__` key (the prototype-poisoning guard Fastify's
 * own parser had). A leading byte-order mark is ignored (RFC 8259 allows it).
 */
export function parseJsonBody(contentType: string | undefined, bytes: Buffer): unknown {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
        throw new UnsupportedMediaTypeError(`JSON bodies are UTF-8 (RFC 8259); this one says charset=${charset}.`);
    }
    if (bytes.length === 0) throw new InvalidRequestError("The request body is empty: send a JSON object.", "body");
    if (!isUtf8(bytes)) throw new InvalidRequestError("The request body is not valid UTF-8.", "body");
    let text = bytes.toString("utf8");
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let value: unknown;
    try {
        value = JSON.parse(text);
    } catch (error) {
        throw new InvalidRequestError(`We could not parse the JSON body of your request: ${(error as Error).message}`, "body");
    }
    checkValue(value, []);
    return value;
}

/** Walks the parsed body once, at most {@link maxJsonDepth} deep, so the walk itself cannot overflow. */
function checkValue(value: unknown, path: (string | number)[]): void {
    if (typeof value === "string") {
        if (loneSurrogate.test(value)) {
            const param = paramPath(path);
            throw new InvalidRequestError(
                `Invalid value for '${param || "body"}': the string has an unpaired UTF-16 surrogate escape (such as \\ud800), which is not a Unicode character.`,
                param || "body");
        }
        return;
    }
    if (value === null || typeof value !== "object") return;
    if (path.length >= maxJsonDepth) {
        throw new InvalidRequestError(`The request body nests arrays and objects more than ${maxJsonDepth} levels deep.`, "body");
    }
    if (Array.isArray(value)) {
        for (let index = 0; index < value.length; index += 1) {
            path.push(index);
            checkValue(value[index], path);
            path.pop();
        }
        return;
    }
    for (const [key, item] of Object.entries(value)) {
        path.push(key);
        if (key === "__proto__") throw new InvalidRequestError("The request body has a '__proto__' key, which is not accepted.", paramPath(path));
        if (loneSurrogate.test(key)) {
            throw new InvalidRequestError("A key of the request body has an unpaired UTF-16 surrogate escape (such as \\ud800).", paramPath(path));
        }
        checkValue(item, path);
        path.pop();
    }
}
