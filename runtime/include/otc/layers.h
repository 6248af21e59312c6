/* Layers built from graph nodes: Linear, an MLP helper, and recurrent layers (RNN, LSTM, GRU)
 * as one step of a step function closed through Delay nodes. */
#ifndef OTC_LAYERS_H
#define OTC_LAYERS_H

#include "graph.h"
#include "rng.h"

/* y = x W + b with W [in, out] (Xavier-uniform from rng), b [out] zeros. Names the
 * parameters "<prefix>.weight"/"<prefix>.bias" when prefix is given. Returns y or -1. */
otc_id otc_linear(otc_graph *g, otc_id x, int out_features, otc_rng *rng, const char *prefix);
/* As otc_linear, initialised as PyTorch's nn.Linear: W and b both U(-1/sqrt(in), 1/sqrt(in))
 * (kaiming_uniform with a = sqrt(5) for W), drawn from rng in that order. */
otc_id otc_linear_torch(otc_graph *g, otc_id x, int out_features, otc_rng *rng, const char *prefix);

/* Linear layers to sizes[0..n-1] with the activation op `hidden_act` between them and
 * `out_act` (or -1 for none) after the last. Layers are named "fc1", "fc2", ... */
otc_id otc_mlp(otc_graph *g, otc_id x, int n, const int *sizes, otc_op hidden_act, int out_act,
               otc_rng *rng);

/* A Conv2d layer over x [B,C,H,W]: weight [out_channels, C/groups, kernel, kernel] and bias
 * [out_channels], both U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from rng with fan_in =
 * C/groups*kernel*kernel (PyTorch's Conv2d default), named "<prefix>.weight"/"<prefix>.bias"
 * and the conv node "<prefix>" when prefix is given. params as otc_conv2d (NULL: stride 1,
 * no padding). Returns y [B,out_channels,OH,OW] or -1 (the graph as it was). */
otc_id otc_conv2d_layer(otc_graph *g, otc_id x, int out_channels, int kernel,
                        const otc_conv2d_params *params, otc_rng *rng, const char *prefix);

/* ---- recurrent layers ----
 * Each builds one time step: x [B, in] at step t -> h_t [B, hidden] of the last layer, with
 * Delay nodes holding every layer's h (and LSTM's c) for the next step, zeros after
 * otc_exec_reset_state. Stacks of `layers` feed each layer's h_t to the next one. PyTorch's
 * equations (torch.nn.RNN/LSTM/GRU, batch_first, no dropout):
 *   RNN   h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)
 *   LSTM  [i f g o] = x W_ih^T + b_ih + h W_hh^T + b_hh; i, f, o sigmoid, g tanh;
 *         c' = f c + i g, h' = o tanh(c')
 *   GRU   [r z] = sigmoid of the first 2H of x W_ih^T + b_ih + h W_hh^T + b_hh;
 *         n = tanh(W_in x + b_in + r (W_hn h + b_hn)); h' = (1 - z) n + z h
 * and PyTorch's parameters, named as its state_dict under the prefix: "<prefix>.weight_ih_l<k>"
 * ([gates*H, in] in PyTorch), "weight_hh_l<k>", "bias_ih_l<k>", "bias_hh_l<k>" (gates 1, 4,
 * 3 in the orders above), initialised U(-1/sqrt(H), 1/sqrt(H)) from rng. The graph stores
 * the weights transposed ([in, gates*H], since matmul is x W); otc_recurrent_load_torch and
 * otc_recurrent_read_torch convert. Delays are named "<prefix>.h_l<k>" and "<prefix>.c_l<k>"
 * (their state can be set and its gradient read, executor.h). Returns h_t or -1. */
typedef enum { OTC_CELL_RNN, OTC_CELL_LSTM, OTC_CELL_GRU } otc_cell;

otc_id otc_recurrent(otc_graph *g, otc_cell cell, otc_id x, int hidden, int layers, otc_rng *rng,
                     const char *prefix);
otc_id otc_rnn(otc_graph *g, otc_id x, int hidden, int layers, otc_rng *rng, const char *prefix);
otc_id otc_lstm(otc_graph *g, otc_id x, int hidden, int layers, otc_rng *rng, const char *prefix);
otc_id otc_gru(otc_graph *g, otc_id x, int hidden, int layers, otc_rng *rng, const char *prefix);
/* Gates per cell: 1, 4, 3. */
int otc_cell_gates(otc_cell cell);

/* Set (load) or get (read) the parameter "<prefix>.<key>" (key as PyTorch's state_dict:
 * "weight_ih_l0", "bias_hh_l1", ...) from or to PyTorch's layout: weights [rows, cols]
 * row-major, transposed to or from the graph's [cols, rows]; biases as they are. `count`
 * floats must match the parameter's size. */
otc_status otc_recurrent_load_torch(otc_graph *g, const char *prefix, const char *key,
                                    const float *data, size_t count);
otc_status otc_recurrent_read_torch(otc_graph *g, const char *prefix, const char *key, float *data,
                                    size_t count);

#endif
