// Megatron-LM's pipeline layout notation (NVIDIA/Megatron-LM d98e8a64,
// megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list: commas are
// removed, "(…)*n" is unrolled, then "x*n"; E embedding, t decoder layer, m MTP layer, L loss;
// validate_layer_layout: E first, L last, each exactly once, all t before any m).
#include "ppsearch/search/pipeline_layout.hpp"

#include <cctype>

namespace ppsearch {
namespace {

constexpr std::size_t kMaxExpanded = 1u << 20;  // far above any real model's layer count

// Reads the repeat count after '*' at text[*i]; false if there is none or it is absurd.
bool read_count(const std::string& s, std::size_t* i, std::size_t* n) {
  if (*i >= s.size() || s[*i] != '*') return false;
  ++*i;
  std::size_t v = 0, digits = 0;
  while (*i < s.size() && std::isdigit(static_cast<unsigned char>(s[*i]))) {
    v = v * 10 + static_cast<std::size_t>(s[*i] - '0');
    if (v > kMaxExpanded) return false;
    ++*i;
    ++digits;
  }
  *n = v;
  return digits > 0;
}

bool expand(const std::string& in, std::string* out, std::string* error) {
  std::string s;
  for (char ch : in)
    if (ch != ',' && !std::isspace(static_cast<unsigned char>(ch))) s += ch;
  // Pass 1: "(…)*n" (not nested, as Megatron's regex).
  std::string a;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      if (close == std::string::npos || close == i + 1) {
        *error = "unbalanced or empty '(' at character " + std::to_string(i + 1);
        return false;
      }
      const std::string body = s.substr(i + 1, close - i - 1);
      if (body.find('(') != std::string::npos) {
        *error = "nested parentheses are not part of the notation";
        return false;
      }
      std::size_t j = close + 1, n = 0;
      if (!read_count(s, &j, &n)) {
        *error = "'(" + body + ")' must be followed by '*' and a count";
        return false;
      }
      if (body.size() * n > kMaxExpanded) {
        *error = "the layout expands to too many characters";
        return false;
      }
      for (std::size_t k = 0; k < n; ++k) a += body;
      i = j;
    } else if (s[i] == ')') {
      *error = "unbalanced ')' at character " + std::to_string(i + 1);
      return false;
    } else {
      a += s[i++];
    }
  }
  // Pass 2: "x*n".
  std::string b;
  for (std::size_t i = 0; i < a.size();) {
    const char x = a[i++];
    if (x == '*') {
      *error = "'*' without a layer character before it";
      return false;
    }
    std::size_t n = 1;
    if (i < a.size() && a[i] == '*' && !read_count(a, &i, &n)) {
      *error = "'" + std::string(1, x) + "*' must be followed by a count";
      return false;
    }
    if (b.size() + n > kMaxExpanded) {
      *error = "the layout expands to too many characters";
      return false;
    }
    b.append(n, x);
  }
  *out = b;
  return true;
}

}  // namespace

int pipeline_layout_stages(const std::string& text) {
  std::string e, err;
  if (!expand(text, &e, &err)) return 0;
  int n = 1;
  for (char ch : e) n += ch == '|';
  return n;
}

bool parse_pipeline_layout(const std::string& text, int layers, int mtp_layers,
                           std::vector<int>* bounds, std::string* error) {
  std::string e;
  if (!expand(text, &e, error)) return false;
  bounds->clear();
  int item = 0;  // next chain item
  int t = 0, m = 0, E = 0, L = 0, segment = 0;
  int first_of_segment = 0;
  bool segment_has_item = false, mtp_with_loss = false;
  auto close_segment = [&]() -> bool {
    if (!segment_has_item) {
      *error = "segment " + std::to_string(segment + 1) +
               " holds no embedding, layer or loss: ppsearch's pipeline stages are not empty";
      return false;
    }
    bounds->push_back(first_of_segment);
    ++segment;
    first_of_segment = item;
    segment_has_item = false;
    return true;
  };
  int m_segment = -1;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const char ch = e[i];
    switch (ch) {
      case '|':
        if (!close_segment()) return false;
        break;
      case 'E':
        if (i != 0 || E++ > 0) {
          *error = "'E' (the embedding) must be the first character, once";
          return false;
        }
        ++item;
        segment_has_item = true;
        break;
      case 't':
        if (E == 0 || m > 0 || L > 0) {
          *error = "every 't' must come after 'E' and before any 'm' or 'L'";
          return false;
        }
        ++t;
        ++item;
        segment_has_item = true;
        break;
      case 'm':
        if (L > 0) {
          *error = "'m' (an MTP module) must come before 'L'";
          return false;
        }
        ++m;
        m_segment = segment;
        break;
      case 'L':
        if (i + 1 != e.size() || L++ > 0) {
          *error = "'L' (the output layer and loss) must be the last character, once";
          return false;
        }
        ++item;
        segment_has_item = true;
        mtp_with_loss = m == 0 || m_segment == segment;
        break;
      default:
        *error = std::string("unknown layer character '") + ch + "' (allowed: E t m L | * ( ) ,)";
        return false;
    }
  }
  if (E != 1 || L != 1) {
    *error = "a layout starts with 'E' and ends with 'L'";
    return false;
  }
  if (t != layers) {
    *error = "the layout has " + std::to_string(t) + " decoder layers ('t'), the model " +
             std::to_string(layers);
    return false;
  }
  if (m != mtp_layers) {
    *error = "the layout has " + std::to_string(m) + " MTP modules ('m'), model.mtp_layers is " +
             std::to_string(mtp_layers);
    return false;
  }
  if (!mtp_with_loss) {
    *error =
        "the MTP modules ('m') must be in the segment that holds 'L': ppsearch costs them with "
        "the output layer";
    return false;
  }
  if (!close_segment()) return false;
  bounds->push_back(item);
  return true;
}

}  // namespace ppsearch
