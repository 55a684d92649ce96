/* CUPTI's own floor: an injection library subscribing an empty callback to the same driver
 * memory calls as libgpuledger_tracer.so (tracer/src/decode: cbid::ALL), so the difference
 * between it and the tracer is the tracer's own work. */
#include <cupti.h>
#include <stdio.h>

static void CUPTIAPI nothing(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) {
    (void)u; (void)d; (void)id; (void)data;
}

int InitializeInjection(void) {
    static const unsigned ids[] = {38, 39, 243, 245, 294, 302, 371, 379, 549, 550, 551, 552,
                                   598, 599, 600, 601, 611, 612};
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, nothing, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "null_inject: cuptiSubscribe failed\n");
        return 1;
    }
    for (unsigned i = 0; i < sizeof ids / sizeof ids[0]; i++)
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
    return 1;
}
