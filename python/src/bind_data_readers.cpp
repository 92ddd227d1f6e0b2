// ug.data's readers of CSV and .npz files (read_idx and read_npy are in bind_data.cpp).
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/data/csv.h"
#include "ug/data/npz.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::data::CsvOptions;

/** header=True / False / "infer" (or None, as "infer"). */
std::optional<bool> header_from_python(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True;
  if (nb::isinstance<nb::str>(h) && nb::cast<std::string>(h) == "infer") return std::nullopt;
  ug::fail("[read_csv] header must be True, False or \"infer\", got ", nb::cast<std::string>(nb::repr(h)));
}

/** usecols: None, one column, or a sequence of them; a column is an int index or a str name. */
std::vector<std::variant<int64_t, std::string>> usecols_from_python(nb::handle h) {
  std::vector<std::variant<int64_t, std::string>> out;
  if (h.is_none()) return out;
  auto one = [&](nb::handle c) {
    if (nb::isinstance<nb::str>(c)) out.emplace_back(nb::cast<std::string>(c));
    else if (PyIndex_Check(c.ptr()) && !PyBool_Check(c.ptr())) out.emplace_back(nb::cast<int64_t>(nb::int_(c)));
    else
      ug::fail<ug::TypeError>("[read_csv] usecols holds ", nb::cast<std::string>(nb::repr(c)), ", not an int or str");
  };
  if (nb::isinstance<nb::str>(h) || PyIndex_Check(h.ptr())) one(h);
  else
    for (nb::handle c : nb::iter(h)) one(c);
  return out;
}

}  // namespace

void bind_data_readers(nb::module_& data) {
  data.def(
      "read_csv",
      [](const std::filesystem::path& path, const std::string& delimiter, nb::handle header,
         std::optional<ug::DType> dtype, nb::handle usecols, int64_t skip_rows, bool return_columns) -> nb::object {
        if (delimiter.size() != 1) ug::fail("[read_csv] delimiter must be one character, got '", delimiter, "'");
        const CsvOptions options{delimiter[0], header_from_python(header), dtype.value_or(ug::DType::Float32),
                                 usecols_from_python(usecols), skip_rows};
        ug::data::CsvTable table;
        {
          nb::gil_scoped_release release;
          table = ug::data::read_csv_table(path.string(), options);
        }
        if (!return_columns) return nb::cast(table.data);
        nb::list columns;
        for (const std::string& c : table.columns) columns.append(nb::str(c.c_str(), c.size()));
        return nb::make_tuple(table.data, columns);
      },
      "path"_a, "delimiter"_a = ",", "header"_a = "infer", "dtype"_a = nb::none(), "usecols"_a = nb::none(),
      "skip_rows"_a = 0, "return_columns"_a = false,
      "The numbers of a CSV file as a 2-D tensor (float32 unless dtype says otherwise), like numpy.loadtxt.\n\n"
      "header: True (the first row names the columns), False, or \"infer\" (a header when the first row has a\n"
      "cell that is not a number). usecols: column indices or header names to keep, in order. skip_rows:\n"
      "lines skipped first. Quoted fields, CRLF and blank lines are handled; an empty cell or NA, N/A, null\n"
      "is NaN for float dtypes and an error for integer ones. return_columns=True returns (tensor, names),\n"
      "names being the header's (empty without one). Bad cells and ragged rows raise ValueError naming\n"
      "file:line:column.");
  data.def(
      "read_npz",
      [](const std::filesystem::path& path) {
        ug::data::NpzArrays arrays;
        {
          nb::gil_scoped_release release;
          arrays = ug::data::read_npz(path.string());
        }
        nb::dict out;
        for (const auto& [name, t] : arrays) out[nb::str(name.c_str(), name.size())] = nb::cast(t);
        return out;
      },
      "path"_a,
      "The arrays of a NumPy .npz file (numpy.savez or savez_compressed) as a dict name -> tensor, as\n"
      "np.load's keys. Corrupt archives and members that claim more data than they can hold raise ValueError.");
}

}  // namespace ugpy
