import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
    { ignores: ["dist/", "node_modules/", "coverage/"] },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
        rules: {
            "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
            "@typescript-eslint/consistent-type-imports": "error",
            "no-console": ["error", { allow: ["error"] }]
        }
    },
    {
        files: ["bench/**", "scripts/**", "bin/**"],
        rules: { "no-console": "off" },
        languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } }
    }
);
