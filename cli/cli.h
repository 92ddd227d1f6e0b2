// The `ug` subcommands and the few argument helpers they share. Parsing is hand-rolled:
// each command walks its own arguments, so adding an option is one `if`.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ug::cli {

using Args = std::vector<std::string_view>;

/** Bad command-line arguments: main prints the message and the usage, then exits 2. */
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** The value of the option at args[i], written `--name=value` or `--name value`; in the
 *  second form i moves past the value. */
std::string_view option_value(const Args& args, size_t& i);
/** The option's name without any `=value`. */
std::string_view option_name(std::string_view arg);
/** An integer option in [min, max], or a UsageError naming the option. */
int64_t parse_int(std::string_view option, std::string_view text, int64_t min, int64_t max);

/** A number option in [min, max], or a UsageError naming the option. */
double parse_double(std::string_view option, std::string_view text, double min, double max);

int run_demo(const Args& args);
int run_env(const Args& args);
int run_summary(const Args& args);
int run_train(const Args& args);
int run_eval(const Args& args);
int run_predict(const Args& args);
int run_export(const Args& args);
int run_serve(const Args& args);
int run_launch(const Args& args);

}  // namespace ug::cli
