/// \file
/// FLOPs conventions under which published runs report their utilisation
/// (tests/validation/runs-README.md "FLOPs conventions", README.md "FLOPs conventions").
/// A prediction is turned into the row's own convention before it is compared with the printed
/// figure. Pure core: std only.
#pragma once

#include <string>

#include "ppsearch/spec/specs.hpp"

namespace ppsearch {

/// \brief The labels of the runs schema's `mfu_convention` column.
enum class MfuConvention {
  kNar21Eq3Hfu,       ///< "nar21-eq3-hfu": Narayanan et al. 2021 Eq. 3 (counts full recompute)
  kKor22Model,        ///< "kor22-model": Korthikanti et al. 2022 Eq. 7
  kDgxcMha,           ///< "dgxc-mha": dgxc-benchmarking README, MHA / 4h-MLP form
  kDgxcMhaOvercount,  ///< "dgxc-mha-overcount": the same formula applied to a GQA model
  kPalm,              ///< "palm-6N+12Lhs": Chowdhery et al. (PaLM) Appendix B
  kSixN,              ///< "6N"
  kMegatronCore,      ///< "megatron-core": num_floating_point_operations (r0.8.0)
  kLlmFoundry,        ///< "llmfoundry-6N+12Lds": llm-foundry collect_results.py, MPT's N
  kUnknown,           ///< any other label: MFU not comparable (the step time still is)
};

/// \brief The convention named by `label` (exact, case-sensitive), kUnknown otherwise.
MfuConvention parse_mfu_convention(const std::string& label);

/// \brief The schema label of a convention ("n/a" for kUnknown).
const char* to_string(MfuConvention convention);

/// \brief All parameters N of the model, weights only (biases are not counted): per layer the
///        Q, K, V and output projections h·(a·d + 2·G·d) + a·d·h, the MLP h·F·(3 if gated else
///        2) and two norms 2h; the input embedding V·h, the output layer V·h unless tied, and the
///        final norm h. Used by the 6N-style conventions ("N all parameters", runs-README).
double parameter_count(const ModelSpec& model);

/// \brief Parameters of an MPT model as llm-foundry prints them (NumParams): per layer the Q, K,
///        V and output projections with biases, the two-matrix MLP with biases and two
///        LayerNorms with weight and bias; the tied embedding V·h, the learned position
///        embedding s·h (max_seq_len = the sequence length) and the final LayerNorm 2h.
///        For MHA with F = 4h: L·(12h² + 13h) + V·h + s·h + 2h.
double mpt_parameter_count(const ModelSpec& model);

/// \brief FLOPs of one optimizer step of `global_batch` sequences under `convention`, from the
///        closed form the convention's source prints; NaN for kUnknown. head_dim must be set.
double convention_flops_per_step(MfuConvention convention, const ModelSpec& model,
                                 int global_batch);

/// \brief Utilisation (0–1) of a step of `step_time_s` on `gpus` GPUs of `peak_flop_per_s`
///        each, under `convention`: convention FLOPs / (time × GPUs × peak). NaN for kUnknown or
///        a non-positive time.
double convention_mfu(MfuConvention convention, const ModelSpec& model, int global_batch,
                      double step_time_s, int gpus, double peak_flop_per_s);

}  // namespace ppsearch
