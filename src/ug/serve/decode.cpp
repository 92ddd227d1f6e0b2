#include "ug/serve/decode.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <utility>

#include "ug/core/error.h"

namespace ug::serve {

namespace {

using json = nlohmann::json;

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string shape_text(const std::vector<int64_t>& shape, bool batch) {
  std::string out = batch ? "(N" : "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (batch || i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 && !batch ? ",)" : ")");
}

/** Reads {"inputs": nested lists of numbers}, checking as it goes that the lists are
 *  rectangular and no deeper than a batch of samples; the first problem stops the parse. */
class InputsHandler {
 public:
  InputsHandler(size_t max_depth, std::string expected_shape, size_t expected_values)
      : max_depth_(max_depth), expected_shape_(std::move(expected_shape)) {
    values_.reserve(expected_values);
  }

  bool null() { return wrong_value("null"); }
  bool boolean(bool) { return wrong_value("a boolean"); }
  bool string(std::string&) { return wrong_value("a string"); }
  bool binary(json::binary_t&) { return wrong_value("binary data"); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<float>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return number(static_cast<float>(v)); }
  bool number_float(json::number_float_t v, const std::string& text) {
    // From the text, so that both readers round the same way (once, to float32).
    float f = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
    return number(ec == std::errc() && end == text.data() + text.size() ? f : static_cast<float>(v));
  }
  bool number(float v) { return numbers(&v, 1); }
  /** `count` consecutive numbers of the innermost open list. */
  bool numbers(const float* v, size_t count) {
    if (open_.empty()) return wrong_value("a number");
    if (!element(Kind::Number)) return false;
    open_.back() += static_cast<int64_t>(count) - 1;
    values_.insert(values_.end(), v, v + count);
    return true;
  }

  bool start_object(size_t) {
    if (state_ == State::Start) {
      state_ = State::Object;
      return true;
    }
    return wrong_value("an object");
  }
  bool key(std::string& name) {
    if (name != "inputs") return fail("unknown key '" + name + "'; the body is {\"inputs\": [[...], ...]}");
    if (seen_inputs_) return fail("'inputs' given twice");
    seen_inputs_ = true;
    state_ = State::Inputs;
    return true;
  }
  bool end_object() { return true; }

  bool start_array(size_t) {
    if (state_ != State::Inputs) return wrong_value("an array");
    if (!open_.empty() && !element(Kind::List)) return false;
    if (open_.size() == max_depth_)
      return fail("expected 'inputs' of shape " + expected_shape_ + ": got lists nested deeper than " +
                  std::to_string(max_depth_));
    open_.push_back(0);
    if (dims_.size() < open_.size()) dims_.push_back(-1);
    return true;
  }
  bool end_array() {
    const size_t depth = open_.size() - 1;
    if (dims_[depth] < 0) dims_[depth] = open_[depth];
    else if (dims_[depth] != open_[depth])
      return fail("'inputs' is ragged: lists at depth " + std::to_string(depth + 1) + " have " +
                  std::to_string(dims_[depth]) + " and " + std::to_string(open_[depth]) + " items");
    open_.pop_back();
    if (open_.empty()) state_ = State::Object;
    return true;
  }

  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    // nlohmann's messages start with "[json.exception.parse_error.101] parse error at ...".
    const std::string what = e.what();
    const size_t at = what.find("] ");
    return fail("malformed JSON: " + (at == std::string::npos ? what : what.substr(at + 2)));
  }

  const std::string& error() const { return error_; }
  bool saw_inputs() const { return seen_inputs_; }
  std::vector<float>& values() { return values_; }
  /** The shape of the lists down to the numbers: (rows, ...). */
  std::vector<int64_t> shape() const { return {dims_.begin(), dims_.begin() + static_cast<int64_t>(leaf_depth_)}; }

 private:
  enum class State { Start, Object, Inputs };
  enum class Kind { Unknown, Number, List };

  /** Counts an item of the innermost open list and checks it is of the kind its siblings are. */
  bool element(Kind kind) {
    const size_t depth = open_.size();
    ++open_.back();
    if (kinds_.size() < depth) kinds_.resize(depth, Kind::Unknown);
    Kind& seen = kinds_[depth - 1];
    if (seen == Kind::Unknown) {
      seen = kind;
      if (kind == Kind::Number) leaf_depth_ = depth;
      return true;
    }
    if (seen != kind) return fail("'inputs' mixes numbers and lists at depth " + std::to_string(depth));
    return true;
  }
  bool wrong_value(const std::string& what) {
    if (state_ != State::Inputs) return fail("expected a JSON object {\"inputs\": [[...], ...]}, got " + what);
    if (open_.empty()) return fail("expected 'inputs' to be a list of rows, got " + what);
    return fail("expected float32 numbers in 'inputs', got " + what);
  }
  bool fail(const std::string& message) {
    if (error_.empty()) error_ = message;
    return false;
  }

  size_t max_depth_;
  std::string expected_shape_;
  State state_ = State::Start;
  bool seen_inputs_ = false;
  std::vector<int64_t> open_;  // items so far in each open list, outermost first
  std::vector<int64_t> dims_;  // the length of the lists at each depth (-1: none closed yet)
  std::vector<Kind> kinds_;
  size_t leaf_depth_ = 0;
  std::vector<float> values_;
  std::string error_;
};

/** Feeds the common body, plain JSON of objects, lists, numbers and keys without escapes, to
 *  the handler, reading numbers with std::from_chars: several times faster than nlohmann's
 *  lexer, which copies each character into two buffers and calls strtod. Returns false on
 *  anything else (strings, literals, escapes, malformed input) for nlohmann to read instead. */
class PlainReader {
 public:
  enum class Result { Ok, Stopped, Unsupported };  // Stopped: the handler refused something

  PlainReader(std::string_view text, InputsHandler& handler)
      : p_(text.data()), end_(text.data() + text.size()), handler_(handler) {}

  Result read() {
    Result r = value();
    skip_space();
    return r == Result::Ok && p_ != end_ ? Result::Unsupported : r;
  }

 private:
  Result value() {
    skip_space();
    if (p_ == end_) return Result::Unsupported;
    if (*p_ == '[') return list();
    if (*p_ == '{') return object();
    float v = 0;
    if (Result r = number(v); r != Result::Ok) return r;
    return handler_.number(v) ? Result::Ok : Result::Stopped;
  }

  Result list() {
    ++p_;
    if (!handler_.start_array(0)) return Result::Stopped;
    skip_space();
    if (p_ != end_ && *p_ == ']') return close_list();
    for (;;) {
      if (Result r = p_ != end_ && starts_number(*p_) ? numbers() : value(); r != Result::Ok) return r;
      skip_space();
      if (p_ == end_) return Result::Unsupported;
      if (*p_ == ']') return close_list();
      if (*p_++ != ',') return Result::Unsupported;
    }
  }
  /** A run of numbers in a list, up to its last number or the item before a non-number,
   *  handed to the handler in blocks: the body of a request is mostly such runs. */
  Result numbers() {
    constexpr size_t kBlock = 256;
    float block[kBlock];
    size_t n = 0;
    for (Result r;;) {
      if ((r = number(block[n++])) != Result::Ok) return r;
      const bool more = next_item_is_number();
      if ((n == kBlock || !more) && !handler_.numbers(block, std::exchange(n, 0))) return Result::Stopped;
      if (!more) return Result::Ok;
    }
  }
  /** Moves past ", " when a number follows it. */
  bool next_item_is_number() {
    const char* p = p_;
    while (p != end_ && space(*p)) ++p;
    if (p == end_ || *p++ != ',') return false;
    while (p != end_ && space(*p)) ++p;
    if (p == end_ || !starts_number(*p)) return false;
    p_ = p;
    return true;
  }

  Result close_list() {
    ++p_;
    return handler_.end_array() ? Result::Ok : Result::Stopped;
  }

  Result object() {
    ++p_;
    if (!handler_.start_object(0)) return Result::Stopped;
    skip_space();
    if (p_ != end_ && *p_ == '}') return close_object();
    for (;;) {
      skip_space();
      std::string name;
      if (!key(name)) return Result::Unsupported;
      if (!handler_.key(name)) return Result::Stopped;
      if (Result r = value(); r != Result::Ok) return r;
      skip_space();
      if (p_ == end_) return Result::Unsupported;
      if (*p_ == '}') return close_object();
      if (*p_++ != ',') return Result::Unsupported;
    }
  }
  Result close_object() {
    ++p_;
    return handler_.end_object() ? Result::Ok : Result::Stopped;
  }
  /** "name": with plain characters only. */
  bool key(std::string& name) {
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
    while (p_ != end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
    if (p_ == end_ || *p_ != '"') return false;
    name.assign(start, p_++);
    skip_space();
    return p_ != end_ && *p_++ == ':';
  }

  /** A number in JSON's grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, which is
   *  stricter than from_chars (no "inf", "1.", leading zeros); p_ moves past it once it is read. */
  Result number(float& out) {
    const char* const start = p_;
    const char* p = p_;
    const bool negative = p != end_ && *p == '-';
    if (negative) ++p;
    if (p == end_ || !digit(*p)) return Result::Unsupported;
    uint64_t mantissa = 0;  // the digits without the point, while they fit float's fast path
    int64_t digits = 0, decimals = 0;
    if (*p == '0') ++p;
    else digits += skip_digits(p, mantissa);
    if (p != end_ && *p == '.') {
      ++p;
      decimals = skip_digits(p, mantissa);
      if (decimals == 0) return Result::Unsupported;
      digits += decimals;
    }
    bool exponent = false;
    if (p != end_ && (*p == 'e' || *p == 'E')) {
      exponent = true;
      ++p;
      if (p != end_ && (*p == '+' || *p == '-')) ++p;
      uint64_t ignored = 0;
      if (!skip_digits(p, ignored)) return Result::Unsupported;
    }
    p_ = p;
    // Clinger's fast path: an integer below 2^24 and a power of ten up to 10^10 are exact in
    // float, so one correctly rounded division gives what from_chars gives ("0.123456").
    static constexpr float kPow10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
    if (!exponent && digits <= 19 && mantissa <= (uint64_t(1) << 24) && decimals <= 10) {
      const float v = static_cast<float>(mantissa) / kPow10[decimals];
      out = negative ? -v : v;
      return Result::Ok;
    }
    const auto [end, ec] = std::from_chars(start, p, out);
    return ec == std::errc() && end == p ? Result::Ok : Result::Unsupported;  // else out of float's range
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }
  static bool starts_number(char c) { return digit(c) || c == '-'; }
  static bool space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
  /** Moves `p` past digits, appending them to `value` (which saturates: its caller checks the
   *  count); returns how many there were. Eight bytes at a time while eight can be read. */
  int64_t skip_digits(const char*& p, uint64_t& value) const {
    static constexpr uint64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    const char* const start = p;
    while (end_ - p >= 8) {
      uint64_t bytes;
      std::memcpy(&bytes, p, 8);
      const uint64_t values = bytes ^ 0x3030303030303030u;  // a digit's byte becomes 0..9
      // The high bit of each byte that is not 0..9 (a carry only leaves such a byte).
      const uint64_t others = ((values + 0x7676767676767676u) | values) & 0x8080808080808080u;
      const int n = others ? std::countr_zero(others) / 8 : 8;  // x86-64 is little-endian
      if (n == 0 || p - start + n > 19) break;
      value = value * kPow10[n] + eight_digits(values << (8 * (8 - n)));
      p += n;
      if (n < 8) return p - start;
    }
    const char* q = p;
    for (; q != end_ && digit(*q); ++q)
      if (q - start < 19) value = value * 10 + static_cast<uint64_t>(*q - '0');
    p = q;
    return q - start;
  }
  /** The number whose decimal digits are the bytes of `digits`, the first byte the most
   *  significant digit (Lemire's SWAR reduction: pairs, then fours, then eight). */
  static uint64_t eight_digits(uint64_t digits) {
    digits = digits * 10 + (digits >> 8);
    constexpr uint64_t kMask = 0x000000FF000000FFu;
    return ((digits & kMask) * (100 + (1000000ull << 32)) + ((digits >> 16) & kMask) * (1 + (10000ull << 32))) >> 32;
  }
  void skip_space() {
    const char* p = p_;
    while (p != end_ && space(*p)) ++p;
    p_ = p;
  }

  const char* p_;
  const char* end_;
  InputsHandler& handler_;
};

}  // namespace

Inputs decode_json(std::string_view body, const std::vector<int64_t>& sample_shape) {
  const int64_t sample = numel(sample_shape);
  // A number takes at least two bytes with its comma: reserving for the body's size at most.
  const size_t max_depth = sample_shape.size() + 1;
  std::string expected = shape_text(sample_shape, true);
  if (sample_shape.size() > 1) expected += " or " + shape_text({sample}, true);
  const size_t expected_values = std::min<size_t>(body.size() / 2, 1 << 16);
  InputsHandler handler(max_depth, expected, expected_values);
  PlainReader::Result plain = PlainReader(body, handler).read();
  bool ok = plain == PlainReader::Result::Ok;
  if (plain == PlainReader::Result::Unsupported) {
    handler = InputsHandler(max_depth, expected, expected_values);
    ok = json::sax_parse(body.begin(), body.end(), &handler);
  }
  if (!ok || !handler.saw_inputs()) {
    if (!handler.error().empty()) fail<ValueError>(handler.error());
    fail<ValueError>("expected a JSON object {\"inputs\": [[...], ...]} with a key 'inputs'");
  }
  const std::vector<int64_t> shape = handler.shape();
  const std::vector<int64_t> row(shape.begin() + (shape.empty() ? 0 : 1), shape.end());
  const bool rows_ok =
      shape.size() >= 2 && shape[0] >= 1 && (row == sample_shape || (row.size() == 1 && row[0] == sample));
  if (!rows_ok)
    fail<ValueError>("expected 'inputs' of shape ", expected, ", got ",
                     shape.empty() ? std::string("an empty list") : shape_text(shape, false));
  return {.values = std::move(handler.values()), .rows = shape[0]};
}

Inputs decode_float32(std::string_view body, const std::vector<int64_t>& sample_shape) {
  const int64_t sample = numel(sample_shape);
  const size_t row_bytes = static_cast<size_t>(sample) * sizeof(float);
  if (body.empty() || body.size() % row_bytes != 0)
    fail<ValueError>("expected float32 rows of ", sample, " values (a multiple of ", row_bytes, " bytes), got ",
                     body.size(), " bytes");
  Inputs out{.values = std::vector<float>(body.size() / sizeof(float)),
             .rows = static_cast<int64_t>(body.size() / row_bytes)};
  std::memcpy(out.values.data(), body.data(), body.size());  // x86-64 is little-endian
  return out;
}

}  // namespace ug::serve
