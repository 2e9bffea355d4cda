import { parseArgs } from "node:util";
import { isBooleanWord, isSwitch, settings, type SettingDefinition } from "../config/settings.js";

/** `maple serve`'s arguments, split: each setting's flag value as resolveConfig takes it, and --help. */
export interface ServeFlags {
    flags: Record<string, string>;
    help: boolean;
}

const switches = new Set((settings as readonly SettingDefinition[]).filter(isSwitch).map((setting) => setting.flag));

/**
 * Splits `maple serve`'s arguments. A boolean setting's flag is a switch, as in llama-server and
 * vLLM: `--swa-full` alone is true, `--no-swa-full` false, and `--swa-full=WORD` or
 * `--swa-full WORD` take a boolean word (true/false, 1/0, yes/no, on/off), so `--webui false`
 * keeps working. A bare switch takes the next argument only when that is such a word: before
 * another flag or any other word it is true, and the word stays an argument of its own.
 * --model may be given several times: the models to serve, the first the default (joined as a
 * comma list, as MAPLE_MODEL takes them). Throws parseArgs' error (its message is for the user)
 * on an unknown flag, a flag without its value, or a positional argument.
 */
export function parseServeFlags(args: readonly string[]): ServeFlags {
    const { values } = parseArgs({
        args: spellSwitches(args),
        options: {
            // Every flag, the switches too, takes a string: spellSwitches gave each switch its word,
            // and the setting's own parser validates it, as it does its MAPLE_* variable.
            ...Object.fromEntries(settings.map((setting) => [setting.flag, { type: "string" as const }])),
            model: { type: "string", multiple: true },
            help: { type: "boolean", short: "h" }
        },
        strict: true,
        allowPositionals: false
    });
    const { model, help, ...single } = values;
    return {
        flags: { ...single as Record<string, string>, ...(model === undefined ? {} : { model: model.join(",") }) },
        help: help === true
    };
}

/** Each switch as `--flag=WORD`: `--x` → `--x=true` (or `--x=WORD` with the word after it), `--no-x` → `--x=false`. */
function spellSwitches(args: readonly string[]): string[] {
    const spelled: string[] = [];
    for (let index = 0; index < args.length; index++) {
        const arg = args[index]!;
        // Past `--` nothing is a flag (parseArgs then refuses the positionals).
        if (arg === "--") return [...spelled, ...args.slice(index)];
        const name = arg.startsWith("--") && !arg.includes("=") ? arg.slice(2) : undefined;
        const next = args[index + 1];
        if (name !== undefined && switches.has(name)) {
            const word = next !== undefined && isBooleanWord(next) ? next : undefined;
            spelled.push(`--${name}=${word ?? "true"}`);
            if (word !== undefined) index++;
        } else if (name?.startsWith("no-") === true && switches.has(name.slice("no-".length))) {
            spelled.push(`--${name.slice("no-".length)}=false`);
        } else {
            spelled.push(arg);
        }
    }
    return spelled;
}
