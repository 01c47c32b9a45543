// The validation runs CSVs as text, and one cell of one row replaced by column name (for tests
// that a bad cell is refused with its column and line). Quoted fields (the sources) are kept.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ppsearch::test {

inline std::string validation_text(const std::string& file) {
  std::ifstream in(std::string(PPSEARCH_SOURCE_DIR) + "/tests/validation/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// [begin, end) of each field of the line text[from, to), honouring double quotes.
inline std::vector<std::pair<std::size_t, std::size_t>> csv_fields(const std::string& text,
                                                                   std::size_t from,
                                                                   std::size_t to) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  bool quoted = false;
  std::size_t start = from;
  for (std::size_t i = from; i < to; ++i) {
    if (text[i] == '"') quoted = !quoted;
    if (text[i] == ',' && !quoted) {
      out.emplace_back(start, i);
      start = i + 1;
    }
  }
  out.emplace_back(start, to);
  return out;
}

// The cell of `column` in the row whose id is `id`; *old_value receives what was there. Returns
// false when the column or the row is missing.
inline bool replace_cell(std::string* text, const std::string& id, const std::string& column,
                         const std::string& value, std::string* old_value = nullptr) {
  const std::size_t header_end = text->find('\n');
  if (header_end == std::string::npos) return false;
  const auto names = csv_fields(*text, 0, header_end);
  std::size_t col = names.size();
  for (std::size_t k = 0; k < names.size(); ++k)
    if (text->compare(names[k].first, names[k].second - names[k].first, column) == 0) col = k;
  const std::size_t row = text->find("\n" + id + ",");
  if (col == names.size() || row == std::string::npos) return false;
  std::size_t eol = text->find('\n', row + 1);
  if (eol == std::string::npos) eol = text->size();
  const auto cells = csv_fields(*text, row + 1, eol);
  if (col >= cells.size()) return false;
  const auto [b, e] = cells[col];
  if (old_value) *old_value = text->substr(b, e - b);
  text->replace(b, e - b, value);
  return true;
}

}  // namespace ppsearch::test
