/** llama.cpp's `general.file_type` values (enum llama_ftype) for the files written here. */
export const LlamaFileType = {
    MostlyQ4_0: 2,
    MostlyQ8_0: 7,
    MostlyTQ2_0: 37
} as const;
