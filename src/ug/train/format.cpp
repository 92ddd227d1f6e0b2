#include "ug/train/format.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "ug/core/error.h"

namespace ug::train {

namespace {

/** One replacement field: the value (an integer for the epoch) under a Python format spec. */
std::string format_value(double value, bool integer, std::string_view spec, const char* who, std::string_view field) {
  auto bad = [&] {
    fail<ValueError>("[", who, "] format spec \"", spec, "\" of field {", field,
                     "} is not supported: use [sign][#][0][width][.precision][type], type one of d f e g %");
  };
  std::string flags;
  size_t i = 0;
  while (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ' || spec[i] == '#' || spec[i] == '0')) {
    flags += spec[i] == '-' ? std::string() : std::string(1, spec[i]);  // Python's '-' sign is the default
    ++i;
  }
  std::string width;
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) width += spec[i++];
  std::string precision;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) precision += spec[i++];
    if (precision.empty()) bad();
  }
  char type = i < spec.size() ? spec[i++] : '\0';
  if (i != spec.size()) bad();
  char buf[128];
  const std::string head = "%" + flags + width;
  switch (type) {
    case '\0':
      if (!integer && precision.empty()) {
        const std::string repr = python_repr(value);
        std::snprintf(buf, sizeof buf, (head + "s").c_str(), repr.c_str());
        return buf;
      }
      if (integer && precision.empty()) type = 'd';
      else type = 'g';
      break;
    case 'd':
      if (!precision.empty()) bad();
      break;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
    case '%': break;
    default: bad();
  }
  if (type == 'd') {
    std::snprintf(buf, sizeof buf, (head + "lld").c_str(), static_cast<long long>(std::llround(value)));
    return buf;
  }
  std::string prec = ".";  // appended, not "." + string: GCC 12 warns falsely (-Wrestrict) on that
  prec += precision.empty() ? std::string_view("6") : precision;
  if (type == '%') {
    std::snprintf(buf, sizeof buf, (head + prec + "f").c_str(), value * 100);
    return std::string(buf) + "%";
  }
  std::snprintf(buf, sizeof buf, (head + prec + type).c_str(), value);
  return buf;
}

}  // namespace

std::string format_fields(const std::string& pattern, int64_t epoch, const Logs& logs, const char* who) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') fail<ValueError>("[", who, "] single '}' in \"", pattern, "\" (write '}}' for a brace)");
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos) fail<ValueError>("[", who, "] unclosed '{' in \"", pattern, "\"");
    const std::string_view field(pattern.data() + i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string name(field.substr(0, colon));
    const std::string_view spec = colon == std::string_view::npos ? std::string_view() : field.substr(colon + 1);
    if (name == "epoch") {
      out += format_value(static_cast<double>(epoch), true, spec, who, field);
    } else if (const double* v = logs.find(name)) {
      out += format_value(*v, false, spec, who, field);
    } else {
      std::string known = "epoch";
      for (const std::string& k : logs.keys()) known += ", " + k;
      fail<ValueError>("[", who, "] \"", pattern, "\" names {", name, "}, which is not in the logs (", known, ")");
    }
    i = close;
  }
  return out;
}

}  // namespace ug::train
