// execve(2) for bin/maple.cjs, which must restart Node with GLIBC_TUNABLES set: glibc reads its
// tunables once, when a process starts, and Node 20 has no process.execve (Node 22.15 does).
// Replacing the process keeps its pid, its stdio and its parent, so a supervisor, a shell's job
// control or a test that signals the pid sees one process, not a wrapper and its child.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <node_api.h>

// A JS array of strings as a NULL-terminated C array (freed by free_strings); NULL on failure.
static char** strings_of(napi_env env, napi_value array) {
    uint32_t length = 0;
    if (napi_get_array_length(env, array, &length) != napi_ok) return NULL;
    char** strings = calloc(length + 1, sizeof(char*));
    if (strings == NULL) return NULL;
    for (uint32_t i = 0; i < length; i++) {
        napi_value item;
        size_t size = 0;
        if (napi_get_element(env, array, i, &item) != napi_ok || napi_get_value_string_utf8(env, item, NULL, 0, &size) != napi_ok) return strings;
        strings[i] = malloc(size + 1);
        if (strings[i] == NULL || napi_get_value_string_utf8(env, item, strings[i], size + 1, &size) != napi_ok) return strings;
    }
    return strings;
}

static void free_strings(char** strings) {
    for (char** each = strings; each != NULL && *each != NULL; each++) free(*each);
    free(strings);
}

// execve(path, argv, envp): does not return on success; returns errno on failure.
static napi_value execve_js(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value args[3];
    napi_get_cb_info(env, info, &argc, args, NULL, NULL);
    char path[4096];
    size_t size = 0;
    napi_value result;
    if (argc < 3 || napi_get_value_string_utf8(env, args[0], path, sizeof(path), &size) != napi_ok) {
        napi_create_int32(env, EINVAL, &result);
        return result;
    }
    char** argv = strings_of(env, args[1]);
    char** envp = strings_of(env, args[2]);
    // Node marks its stdio descriptors close-on-exec: kept open, the new image writes where this one did.
    int stdioFlags[3];
    for (int fd = 0; fd < 3; fd++) {
        stdioFlags[fd] = fcntl(fd, F_GETFD);
        if (stdioFlags[fd] >= 0) fcntl(fd, F_SETFD, stdioFlags[fd] & ~FD_CLOEXEC);
    }
    if (argv != NULL && envp != NULL) execve(path, argv, envp);
    const int error = argv == NULL || envp == NULL ? ENOMEM : errno;
    for (int fd = 0; fd < 3; fd++) {
        if (stdioFlags[fd] >= 0) fcntl(fd, F_SETFD, stdioFlags[fd]);
    }
    free_strings(argv);
    free_strings(envp);
    napi_create_int32(env, error, &result);
    return result;
}

NAPI_MODULE_INIT() {
    napi_value fn;
    napi_create_function(env, "execve", NAPI_AUTO_LENGTH, execve_js, NULL, &fn);
    napi_set_named_property(env, exports, "execve", fn);
    return exports;
}
