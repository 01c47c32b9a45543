// The MoE items of a problem and a candidate as the evaluator builds them: moe_items over the
// dense chain's layer and the attention-only layer (src/cost/moe.cpp), on the cluster's links,
// with the stack-costed rates (cost/items.hpp stack_costed).
#pragma once

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"

namespace ppsearch::test {

inline MoeItems moe_items_of(const Problem& p, const Candidate& c) {
  const Links l = effective_links(p.cluster);
  const Problem e = stack_costed(p);  // as the evaluator's rates (cost/items.hpp)
  return moe_items(e, c, l, chain_costs(e, c, l).layer,
                   chain_costs(attention_only_problem(e), c, l).layer);
}

}  // namespace ppsearch::test
