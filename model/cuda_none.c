/*
 * cuda_none.c — the cuda backend's entry points in a build without CUDA
 * (-Dgpu=disabled, or no toolkit found): every call says so plainly.
 */
#include "model/internal.h"

int sf_cuda_built(void) {
    return 0;
}

int sf_cuda_create(const sf_arch *a, const sf_weights *w, const sf_net_opts *o, sf_cuda **out,
                   sf_err *err) {
    (void)a;
    (void)w;
    (void)o;
    *out = NULL;
    return sf_err_set(err, SF_EUNSUPPORTED,
                      "cuda backend: not built in (configure with -Dgpu=enabled on a machine "
                      "with the CUDA toolkit and cuDNN)");
}

int sf_cuda_eval(sf_cuda *c, const sf_pos *pos, int n, sf_net_out *out, sf_err *err) {
    (void)c;
    (void)pos;
    (void)n;
    (void)out;
    return sf_err_set(err, SF_EUNSUPPORTED, "cuda backend: not built in");
}

void sf_cuda_free(sf_cuda *c) {
    (void)c;
}
