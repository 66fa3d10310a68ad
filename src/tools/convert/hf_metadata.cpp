// tools/convert/hf_metadata: general.* authorship keys of a converted checkpoint (see
// hf_metadata.h).
#include "tools/convert/hf_metadata.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/read_file.h"

namespace k3::tools {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool full_match(const std::string& s, const char* re) {
  return std::regex_match(s, std::regex(re, std::regex::ECMAScript | std::regex::icase));
}
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string> split_parts(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      if (i > b) out.push_back(s.substr(b, i - b));  // empty parts dropped
      b = i + 1;
    }
  return out;
}

std::optional<std::string> join_marked(const std::vector<std::string>& parts,
                                       const std::vector<std::set<std::string>>& types, const char* mark,
                                       const char* unless = nullptr, bool dedup = false) {
  std::string out;
  std::set<std::string> seen;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!types[i].count(mark) || (unless && types[i].count(unless))) continue;
    if (dedup && !seen.insert(parts[i]).second) continue;
    out += (out.empty() ? "" : "-") + parts[i];
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// A size-like part ("7B", "8x7b", "7b1", "small") normalised; marks it a context-length
// finetune ("128k") when it is far from the model's parameter count.
void annotate_size(std::string& part, std::set<std::string>& t, int64_t total_params) {
  std::replace(part.begin(), part.end(), '_', '.');
  if (is_digit(part.back()))
    part = part.substr(0, part.size() - 2) + "." + part.back() + part[part.size() - 2];
  if (part.size() > 1 && is_digit(part[part.size() - 2]) &&
      std::string("kmbt").find(part.back()) != std::string::npos)
    part.back() = static_cast<char>(std::toupper(static_cast<unsigned char>(part.back())));
  if (total_params != 0) {
    const std::string num = part.substr(0, part.size() - 1);
    const bool numeric = !num.empty() && full_match(num, R"(\d+(\.\d+)?)");
    if (numeric) {
      const size_t k = std::string(" KMBT").find(part.back());
      const double label = std::stod(num) * std::pow(1000.0, k == std::string::npos ? -1.0 : double(k));
      const bool far = total_params < 0
                           ? label < static_cast<double>(-total_params / 8)
                           : std::fabs(label - double(total_params)) > double(7 * total_params / 8);
      if (far) {
        t.insert("finetune");
        part.back() = static_cast<char>(std::tolower(static_cast<unsigned char>(part.back())));
      }
    }
  }
  if (t.empty()) t.insert("size_label");
}

}  // namespace

ModelIdComponents model_id_components(const std::string& model_id, int64_t total_params) {
  ModelIdComponents c;
  if (model_id.find(' ') != std::string::npos) {
    c.full_name = model_id;
    return c;
  }
  if (const size_t slash = model_id.find('/'); slash != std::string::npos) {
    c.org = model_id.substr(0, slash);
    c.full_name = model_id.substr(slash + 1);
    if (!c.org->empty() && (*c.org)[0] == '.') c.org.reset();
  } else {
    c.full_name = model_id;
  }
  std::vector<std::string> parts = split_parts(c.full_name, '-');
  std::vector<std::set<std::string>> types(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string& p = parts[i];
    if (full_match(p, R"((v|iter)?\d+([.]\d+)*)")) {
      types[i].insert("version");
    } else if (full_match(p, R"(i?q\d(_\w)*|b?fp?(16|32))")) {
      types[i].insert("type");
      for (char& ch : p) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else if (i > 0 &&
               full_match(p, R"((([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl))")) {
      annotate_size(p, types[i], total_params);
    } else if (i > 0 && full_match(p, "chat|instruct|vision|lora")) {
      types[i].insert(total_params < 0 && full_match(p, "lora") ? "type" : "finetune");
    }
  }
  // Word labels ("small") give way to a numeric one.
  bool numeric_size = false;
  for (size_t i = 0; i < parts.size(); ++i)
    if (types[i].count("size_label") && std::any_of(parts[i].begin(), parts[i].end(), is_digit))
      numeric_size = true;
  if (numeric_size)
    for (size_t i = 0; i < parts.size(); ++i)
      if (types[i].count("size_label") && std::all_of(parts[i].begin(), parts[i].end(), is_alpha))
        types[i].erase("size_label");
  bool at_start = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (at_start && ((types[i].empty() && is_alpha(parts[i][0])) || types[i].count("version"))) {
      types[i].insert("basename");
    } else {
      at_start = false;
      if (types[i].empty()) types[i].insert("finetune");
    }
  }
  for (size_t i = parts.size(); i-- > 0;) {  // a trailing version is not part of the basename
    if (!types[i].count("basename") || types[i].size() == 1) break;
    types[i].erase("basename");
  }
  c.basename = join_marked(parts, types, "basename");
  c.size_label = join_marked(parts, types, "size_label", nullptr, true);
  c.finetune = join_marked(parts, types, "finetune");
  c.version = join_marked(parts, types, "version", "basename");
  if (!c.size_label && !c.finetune && !c.version) c.basename.reset();
  return c;
}

std::string id_to_title(const std::string& s) {
  std::string spaced = s;
  std::replace(spaced.begin(), spaced.end(), '-', ' ');
  std::string out;
  for (const std::string& w : split_parts(spaced, ' ')) {
    const bool has_lower =
        std::any_of(w.begin(), w.end(), [](char ch) { return std::islower((unsigned char)ch); });
    const bool has_upper =
        std::any_of(w.begin(), w.end(), [](char ch) { return std::isupper((unsigned char)ch); });
    std::string t = w;
    if (has_lower && !has_upper && !std::regex_match(w, std::regex(R"((v\d+(\.\d+)*|\d.*))"))) {
      bool prev_cased = false;
      for (char& ch : t) {
        const bool cased = is_alpha(ch);
        if (cased)
          ch = static_cast<char>(prev_cased ? std::tolower((unsigned char)ch)
                                            : std::toupper((unsigned char)ch));
        prev_cased = cased;
      }
    }
    out += (out.empty() ? "" : " ") + t;
  }
  return out;
}

std::string size_label_of(uint64_t n) {
  const double x = static_cast<double>(n);
  double scaled;
  char suffix;
  if (x > 1e12) scaled = x * 1e-12, suffix = 'T';
  else if (x > 1e9) scaled = x * 1e-9, suffix = 'B';
  else if (x > 1e6) scaled = x * 1e-6, suffix = 'M';
  else scaled = x * 1e-3, suffix = 'K';
  std::string digits = fmt::format("{}", static_cast<uint64_t>(std::nearbyint(scaled)));  // half to even
  digits.erase(
      0, digits.find_first_not_of('0') == std::string::npos ? digits.size() : digits.find_first_not_of('0'));
  const int fix = std::max(2 - static_cast<int>(digits.size()), 0);
  return fmt::format("{:.{}f}{}", scaled, fix, suffix);
}

namespace {

json read_json_or_empty(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return json::object();
  try {
    json j = json::parse(read_file(p.string()));
    return j.is_object() ? j : json::object();
  } catch (const std::exception&) { return json::object(); }  // as gguf-py: an unreadable file is none
}

std::vector<std::pair<std::string, gguf::Value>> sampling_kvs(const json& g, const std::string& where) {
  std::vector<std::pair<std::string, gguf::Value>> out;
  enum Kind { Str, I32, F32 };
  const std::tuple<const char*, const char*, Kind> keys[] = {{"sequence", "sequence", Str},
                                                             {"top_k", "top_k", I32},
                                                             {"top_p", "top_p", F32},
                                                             {"min_p", "min_p", F32},
                                                             {"xtc_probability", "xtc_probability", F32},
                                                             {"xtc_threshold", "xtc_threshold", F32},
                                                             {"temperature", "temp", F32},
                                                             {"penalty_last_n", "penalty_last_n", I32},
                                                             {"penalty_repeat", "penalty_repeat", F32},
                                                             {"mirostat", "mirostat", I32},
                                                             {"mirostat_tau", "mirostat_tau", F32},
                                                             {"mirostat_eta", "mirostat_eta", F32}};
  for (const auto& [src, dst, kind] : keys) {
    auto it = g.find(src);
    if (it == g.end() || it->is_null()) continue;
    const std::string key = std::string("general.sampling.") + dst;
    const bool ok = kind == Str ? it->is_string() : kind == I32 ? it->is_number_integer() : it->is_number();
    if (!ok) fail("{}: key '{}' has the wrong type for {}: {}", where, src, key, it->dump());
    if (kind == Str) out.emplace_back(key, gguf::Value::string(it->get<std::string>()));
    else if (kind == I32) out.emplace_back(key, gguf::Value::i32(static_cast<int32_t>(it->get<int64_t>())));
    else out.emplace_back(key, gguf::Value::f32(static_cast<float>(it->get<double>())));
  }
  return out;
}

void fill_from(HfGeneralMetadata& m, bool& has_name, const ModelIdComponents& c) {
  if (!has_name) m.name = id_to_title(c.full_name), has_name = true;
  if (!m.organization && c.org) m.organization = id_to_title(*c.org);
  if (!m.basename) m.basename = c.basename;
  if (!m.finetune) m.finetune = c.finetune;
  if (!m.version) m.version = c.version;
  if (!m.size_label) m.size_label = c.size_label;
}

}  // namespace

HfGeneralMetadata read_hf_general_metadata(const std::string& dir_s, const std::string& name_override,
                                           uint64_t total_params) {
  const fs::path dir(dir_s);
  HfGeneralMetadata m;
  bool has_name = false;
  const json cfg = read_json_or_empty(dir / "config.json");
  if (auto it = cfg.find("_name_or_path"); it != cfg.end() && it->is_string()) {
    const std::string id = it->get<std::string>();
    if (std::count(id.begin(), id.end(), '/') <= 1)
      fill_from(m, has_name, model_id_components(id, static_cast<int64_t>(total_params)));
  }
  std::string dname = fs::absolute(dir).lexically_normal().filename().string();
  if (dname.empty()) dname = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  fill_from(m, has_name, model_id_components(dname, static_cast<int64_t>(total_params)));
  if (!name_override.empty()) m.name = name_override;
  if (!m.size_label && total_params > 0) m.size_label = size_label_of(total_params);
  m.sampling = sampling_kvs(read_json_or_empty(dir / "generation_config.json"),
                            (dir / "generation_config.json").string());
  return m;
}

std::vector<std::pair<std::string, gguf::Value>> HfGeneralMetadata::kvs() const {
  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kv = sampling;
  kv.emplace_back("general.name", Value::string(name));
  if (version) kv.emplace_back("general.version", Value::string(*version));
  if (organization) kv.emplace_back("general.organization", Value::string(*organization));
  if (finetune) kv.emplace_back("general.finetune", Value::string(*finetune));
  if (basename) kv.emplace_back("general.basename", Value::string(*basename));
  if (size_label) kv.emplace_back("general.size_label", Value::string(*size_label));
  return kv;
}

std::string HfGeneralMetadata::mmproj_file_name(const std::string& outtype_upper) const {
  auto dashed = [](std::string s, bool slash) {
    const size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    for (char& ch : s)
      if (ch == ' ' || (slash && ch == '/')) ch = '-';
    return s;
  };
  std::string f = "mmproj-" + dashed(basename ? *basename : name, true);
  if (finetune) f += "-" + dashed(*finetune, false);
  if (version) f += "-" + dashed(*version, false);
  return f + "-" + outtype_upper + ".gguf";
}

}  // namespace k3::tools
