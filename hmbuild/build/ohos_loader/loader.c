/* Registration loader, with ace_napi_double.c a TEST DOUBLE of how the ArkTS runtime loads a
 * module (arkui_napi's native_module_manager): dlopen(module, RTLD_NOW) runs the module's
 * constructor, which must call napi_module_register; the loader then calls the registered
 * nm_register_func with a fake env and exports object and prints, as one JSON line,
 *   {"modname": "...", "nm_version": N, "functions": ["...", ...]}
 * Exit 0 on success; 2 when dlopen fails, 3 when nothing registered, 4 when the module registered
 * no nm_register_func, 64 on usage errors. The loader links libace_napi.z.so (the double) so its
 * symbols are global: a host module that needs no libace_napi resolves its napi_* against it, and
 * an OHOS module that has NEEDED libace_napi.z.so gets the same, already loaded, library. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <node_api.h>

/* The SDK's node_api.h (Node 12 era) has no NAPI_CDECL; newer Node-API headers do. */
#ifndef NAPI_CDECL
#define NAPI_CDECL
#endif

napi_module *hm_double_module(int *registrations);
const char *hm_double_property(size_t i);

static void json_string(const char *s) {
    putchar('"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s lib<name>.so\n", argv[0]);
        return 64;
    }
    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "loader: dlopen %s failed: %s\n", argv[1], dlerror());
        return 2;
    }
    int registrations = 0;
    napi_module *mod = hm_double_module(&registrations);
    if (mod == NULL || registrations == 0) {
        fprintf(stderr, "loader: %s loaded, but no constructor called napi_module_register\n", argv[1]);
        return 3;
    }
    if (mod->nm_register_func == NULL) {
        fprintf(stderr, "loader: %s registered module '%s' with no nm_register_func\n", argv[1],
                mod->nm_modname ? mod->nm_modname : "");
        return 4;
    }
    static int fake_env, fake_exports;  /* opaque to the module; only passed back to the double */
    mod->nm_register_func((napi_env)&fake_env, (napi_value)&fake_exports);
    printf("{\"modname\": ");
    json_string(mod->nm_modname);
    printf(", \"nm_version\": %d, \"registrations\": %d, \"functions\": [", mod->nm_version, registrations);
    for (size_t i = 0; hm_double_property(i) != NULL; i++) {
        if (i) printf(", ");
        json_string(hm_double_property(i));
    }
    printf("]}\n");
    return 0;
}
