// The MoE items of a problem and a candidate as the evaluator builds them: moe_items over the
// dense chain's layer and the attention-only layer (src/cost/moe.cpp), on the cluster's links.
#pragma once

#include "ppsearch/cost/comm.hpp"
#include "ppsearch/cost/items.hpp"
#include "ppsearch/cost/moe.hpp"

namespace ppsearch::test {

inline MoeItems moe_items_of(const Problem& p, const Candidate& c) {
  const Links l = effective_links(p.cluster);
  return moe_items(p, c, l, chain_costs(p, c, l).layer,
                   chain_costs(attention_only_problem(p), c, l).layer);
}

}  // namespace ppsearch::test
