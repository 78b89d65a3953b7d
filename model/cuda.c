/*
 * cuda.c — the C side of the cuda backend: maps the network's weights and a
 * batch of positions onto the plain-typed boundary of cuda_abi.h, and the
 * results back into sf_net_out records. The device work is in cuda.cu.
 */
#include <stdlib.h>
#include <string.h>

#include "model/cuda_abi.h"
#include "model/internal.h"

_Static_assert(SF_CU_NCAT == SF_FEAT_NCAT, "tokenizer categorical slots");
_Static_assert(SF_CU_NCONT == SF_FEAT_NCONT, "tokenizer continuous features");
_Static_assert(SF_CU_NQCONT == SF_FEAT_NQCONT, "tokenizer query features");
_Static_assert(SF_CU_NTYPES == SF_FEAT_NTYPES, "tokenizer token types");
_Static_assert(SF_CU_MAX_TOKENS == SF_FEAT_MAX_TOKENS, "tokenizer token capacity");
_Static_assert(SF_CU_MAX_QUERIES == SF_FEAT_MAX_QUERIES, "tokenizer query capacity");
_Static_assert(SF_CU_VALUE_BINS == SF_NET_VALUE_BINS, "value bins");
_Static_assert(SF_CU_FORECASTS == SF_NET_FORECASTS, "forecasts");
_Static_assert(SF_CU_MAX_LAYERS == SF_ARCH_MAX_LAYERS, "layers");

struct sf_cuda {
    sf_cu *cu;
    int max_batch;
};

int sf_cuda_built(void) {
    return 1;
}

int sf_cuda_create(const sf_arch *a, const sf_weights *w, const sf_net_opts *o, sf_cuda **out,
                   sf_err *err) {
    *out = NULL;
    sf_cu_arch ca = {a->d_model, a->n_layers,   a->n_heads,  a->d_ff,
                     a->d_value, a->d_forecast, a->d_policy, {0}};
    for (int j = 0; j < SF_FEAT_NCAT; j++)
        ca.vocab[j] = sf_feat_vocab[j];
    sf_cu_weights cw;
    memset(&cw, 0, sizeof cw);
    cw.type_emb = w->type_emb;
    for (int j = 0; j < SF_FEAT_NCAT; j++)
        cw.cat_emb[j] = w->cat_emb[j];
    cw.cont_w = w->cont_w;
    cw.cont_b = w->cont_b;
    for (int l = 0; l < a->n_layers; l++) {
        const sf_layer_w *L = &w->layer[l];
        cw.layer[l] = (sf_cu_layer){L->ln1_w, L->ln1_b, L->qkv_w, L->qkv_b, L->out_w, L->out_b,
                                    L->ln2_w, L->ln2_b, L->fc1_w, L->fc1_b, L->fc2_w, L->fc2_b};
    }
    cw.lnf_w = w->lnf_w, cw.lnf_b = w->lnf_b;
    cw.vfc_w = w->vfc_w, cw.vfc_b = w->vfc_b;
    cw.vbins_w = w->vbins_w, cw.vbins_b = w->vbins_b;
    cw.vwin_w = w->vwin_w, cw.vwin_b = w->vwin_b;
    cw.ffc_w = w->ffc_w, cw.ffc_b = w->ffc_b;
    cw.fout_w = w->fout_w, cw.fout_b = w->fout_b;
    cw.pfc1_w = w->pfc1_w, cw.pfc1_b = w->pfc1_b;
    cw.pfc2_w = w->pfc2_w, cw.pfc2_b = w->pfc2_b;
    int prec = o->precision == SF_PREC_BF16   ? SF_CU_BF16
               : o->precision == SF_PREC_TF32 ? SF_CU_TF32
                                              : SF_CU_FP32;
    sf_cuda *c = calloc(1, sizeof *c);
    if (!c)
        return sf_err_set(err, SF_ENOMEM, "cuda backend: out of memory");
    char msg[SF_ERR_MSG_MAX] = "";
    int rc = sf_cu_create(&ca, &cw, prec, o->max_batch, o->device, &c->cu, msg, sizeof msg);
    if (rc != SF_CU_OK) {
        free(c);
        int code = rc == SF_CU_ENOGPU   ? SF_EUNSUPPORTED
                   : rc == SF_CU_EINVAL ? SF_EINVAL
                   : rc == SF_CU_ENOMEM ? SF_ENOMEM
                                        : SF_EIO;
        return sf_err_set(err, code, "cuda backend: %s", msg);
    }
    c->max_batch = o->max_batch;
    *out = c;
    return SF_OK;
}

int sf_cuda_eval(sf_cuda *c, const sf_pos *pos, int n, sf_net_out *out, sf_err *err) {
    sf_cu_inputs in = sf_cu_staging(c->cu);
    int t = 0, q = 0;
    for (int b = 0; b < n; b++) {
        const sf_pos *p = &pos[b];
        in.tok_off[b] = t;
        in.q_off[b] = q;
        memcpy(in.type + t, p->type, (size_t)p->n_tokens);
        memcpy(in.cat + (size_t)t * SF_FEAT_NCAT, p->cat, (size_t)p->n_tokens * sizeof p->cat[0]);
        memcpy(in.cont + (size_t)t * SF_FEAT_NCONT, p->cont,
               (size_t)p->n_tokens * sizeof p->cont[0]);
        for (int k = 0; k < p->n_queries; k++) {
            in.query[2 * (q + k)] = t + p->query[k][0];
            in.query[2 * (q + k) + 1] = t + p->query[k][1];
        }
        if (p->n_queries)
            memcpy(in.qcont + (size_t)q * SF_FEAT_NQCONT, p->qcont,
                   (size_t)p->n_queries * sizeof p->qcont[0]);
        t += p->n_tokens;
        q += p->n_queries;
    }
    in.tok_off[n] = t;
    in.q_off[n] = q;
    char msg[SF_ERR_MSG_MAX] = "";
    if (sf_cu_run(c->cu, n, t, q, msg, sizeof msg) != SF_CU_OK)
        return sf_err_set(err, SF_EIO, "cuda backend: %s", msg);
    sf_cu_results r = sf_cu_results_get(c->cu);
    int qq = 0;
    for (int b = 0; b < n; b++) {
        sf_net_out *o = &out[b];
        memcpy(o->value, r.value + (size_t)b * SF_NET_VALUE_BINS, sizeof o->value);
        o->p_win = r.p_win[b];
        memcpy(o->forecast, r.forecast + (size_t)b * SF_NET_FORECASTS, sizeof o->forecast);
        o->n_queries = pos[b].n_queries;
        if (o->n_queries)
            memcpy(o->policy, r.policy + qq, (size_t)o->n_queries * sizeof(float));
        memset(o->policy + o->n_queries, 0,
               (size_t)(SF_FEAT_MAX_QUERIES - o->n_queries) * sizeof(float));
        qq += o->n_queries;
    }
    return SF_OK;
}

void sf_cuda_free(sf_cuda *c) {
    if (!c)
        return;
    sf_cu_free(c->cu);
    free(c);
}
