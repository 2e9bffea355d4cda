import js from "@eslint/js";
import stylistic from "@stylistic/eslint-plugin";
import tseslint from "typescript-eslint";

// The formatter is @stylistic (run by `npm run lint`, fixed by `npm run format`): it enforces the
// style the code already had (4 spaces, double quotes, semicolons, operators leading wrapped lines)
// without re-wrapping lines the way Prettier would.
const style = stylistic.configs.customize({ indent: 4, quotes: "double", semi: true, commaDangle: "never", braceStyle: "1tbs", arrowParens: true, jsx: false });

export default tseslint.config(
    { ignores: ["dist/", "node_modules/", "coverage/"] },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    style,
    {
        rules: {
            "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
            "@typescript-eslint/consistent-type-imports": "error",
            "no-console": ["error", { allow: ["error"] }],
            // Argument and element lists wrap where they grow long, not one item a line.
            "@stylistic/list-style": "off",
            "@stylistic/multiline-ternary": "off",
            "@stylistic/quote-props": ["error", "as-needed"],
            // GBNF and JSON text inside strings keep their double quotes unescaped.
            "@stylistic/quotes": ["error", "double", { avoidEscape: true }],
            // `case "save": this.count += 1; break;` stays one line.
            "@stylistic/max-statements-per-line": ["error", { max: 2 }],
            "@stylistic/generator-star-spacing": ["error", { named: "after", anonymous: "after", method: "before" }]
        }
    },
    {
        files: ["bench/**", "scripts/**", "bin/**"],
        rules: { "no-console": "off" },
        languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } }
    },
    {
        // CommonJS files (the command's entry must be one, see bin/maple.cjs): require is their import.
        files: ["**/*.cjs"],
        languageOptions: { sourceType: "commonjs", globals: { require: "readonly", module: "writable" } },
        rules: { "@typescript-eslint/no-require-imports": "off" }
    }
);
