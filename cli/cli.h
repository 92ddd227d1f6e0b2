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

/** The mpirun line of `ug launch` and `ug train --nproc`: N processes of `command`, across the
 *  hosts of `hostfile` when given; --allow-run-as-root only as root, --oversubscribe only on one
 *  host with more processes than cores. */
std::vector<std::string> mpirun_line(int64_t n, const std::string& hostfile, const std::vector<std::string>& command);
/** Prints the line (dry_run) and returns 0, or becomes mpirun (exec): returns 1 only when
 *  mpirun cannot be started. */
int exec_mpirun(std::vector<std::string> line, bool dry_run);

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
