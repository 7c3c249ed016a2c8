/* TEST DOUBLE of the ArkTS runtime's libace_napi.z.so -- not a NAPI implementation.
 *
 * It implements only what a module does while it is loaded: napi_module_register (called from the
 * module's constructor during dlopen) stores the napi_module, and napi_define_properties (called
 * by the module's nm_register_func) records the property names. Every other napi_* name of
 * libnapi.ndk.json is an empty stub returning napi_ok (0), generated into napi_stubs.c by
 * hmbuild.build.registration, so a module's imports all resolve under RTLD_NOW.
 * hm_double_module() and hm_double_property() let loader.c read what was recorded. */
#include <stddef.h>
#include <string.h>

#include <node_api.h>

/* The SDK's node_api.h (Node 12 era) has no NAPI_CDECL; newer Node-API headers do. */
#ifndef NAPI_CDECL
#define NAPI_CDECL
#endif

#define HM_DOUBLE_MAX_PROPERTIES 256

static napi_module *g_module;
static int g_registrations;
static const char *g_names[HM_DOUBLE_MAX_PROPERTIES];
static size_t g_count;

NAPI_EXTERN void NAPI_CDECL napi_module_register(napi_module *mod) {
    g_module = mod;
    g_registrations++;
}

NAPI_EXTERN napi_status NAPI_CDECL napi_define_properties(napi_env env, napi_value object, size_t property_count,
                                                          const napi_property_descriptor *properties) {
    (void)env;
    (void)object;
    for (size_t i = 0; i < property_count && g_count < HM_DOUBLE_MAX_PROPERTIES; i++) {
        g_names[g_count++] = properties[i].utf8name ? properties[i].utf8name : "<name given as a napi_value>";
    }
    return napi_ok;
}

__attribute__((visibility("default"))) napi_module *hm_double_module(int *registrations) {
    *registrations = g_registrations;
    return g_module;
}

__attribute__((visibility("default"))) const char *hm_double_property(size_t i) {
    return i < g_count ? g_names[i] : NULL;
}
