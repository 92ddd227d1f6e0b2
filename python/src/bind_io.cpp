// ug.save / ug.load: nested values (a checkpoint dict of state dicts, numbers, strings...) in
// the safetensors format (ug/io/tree_file.h); ug.safetensors: flat dicts of tensors, with the
// safetensors package's names (save_file, load_file, save, load).
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "tree_convert.h"
#include "ug/io/tree_file.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::io::Metadata;
using ug::io::TensorDict;

TensorDict tensors_from_python(nb::handle obj, const char* op) {
  if (!PyMapping_Check(obj.ptr()) || nb::isinstance<ug::Tensor>(obj))
    throw nb::type_error((std::string("[") + op + "] expected a dict of name -> Tensor (e.g. a state_dict()), got " +
                          nb::cast<std::string>(nb::str(obj.type().attr("__name__"))))
                             .c_str());
  TensorDict out;
  for (nb::handle key : nb::iter(obj)) {
    if (!nb::isinstance<nb::str>(key))
      throw nb::type_error(
          (std::string("[") + op + "] key " + nb::cast<std::string>(nb::repr(key)) + " is not a str").c_str());
    nb::object value = obj[key];
    if (!nb::isinstance<ug::Tensor>(value))
      throw nb::type_error((std::string("[") + op + "] entry '" + nb::cast<std::string>(key) + "' is a " +
                            nb::cast<std::string>(nb::str(value.type().attr("__name__"))) + ", not a Tensor")
                               .c_str());
    out.insert(nb::cast<std::string>(key), nb::cast<ug::Tensor>(value));
  }
  return out;
}

nb::dict tensors_to_python(const TensorDict& d) {
  nb::dict out;
  for (const auto& [k, v] : d) out[nb::str(k.c_str(), k.size())] = nb::cast(v);
  return out;
}

nb::dict load_file(const std::filesystem::path& path) {
  TensorDict d;
  {
    nb::gil_scoped_release release;
    d = ug::io::load_file(path.string());
  }
  return tensors_to_python(d);
}

void save_file(nb::handle obj, const std::filesystem::path& path, const std::optional<Metadata>& metadata,
               const char* op) {
  TensorDict d = tensors_from_python(obj, op);
  nb::gil_scoped_release release;
  ug::io::save_file(d, path.string(), metadata.value_or(Metadata{}));
}

}  // namespace

void bind_io(nb::module_& m) {
  m.def(
      "save",
      [](nb::handle obj, const std::filesystem::path& f, const std::optional<Metadata>& metadata) {
        ug::io::Tree tree = tree_from_python(obj, "save");
        nb::gil_scoped_release release;
        ug::io::save(tree, f.string(), metadata.value_or(Metadata{}));
      },
      "obj"_a, "f"_a, "metadata"_a = nb::none(),
      "Saves obj atomically to a safetensors file: a state_dict, or any nesting of dicts (str or int keys), "
      "lists and tuples of tensors, None, bool, int, float and str (a checkpoint). Never pickles.");
  m.def(
      "load",
      [](const std::filesystem::path& f) {
        ug::io::Tree tree;
        {
          nb::gil_scoped_release release;
          tree = ug::io::load(f.string());
        }
        return tree_to_python(tree);
      },
      "f"_a, "What ug.save saved (a plain safetensors file: its dict of name -> Tensor). Runs no code.");

  nb::module_ st = m.def_submodule("safetensors", "the safetensors format, with the safetensors package's names");
  st.def(
      "save_file",
      [](nb::handle tensors, const std::filesystem::path& filename, const std::optional<Metadata>& metadata) {
        save_file(tensors, filename, metadata, "save_file");
      },
      "tensors"_a, "filename"_a, "metadata"_a = nb::none());
  st.def("load_file", &load_file, "filename"_a);
  st.def(
      "save",
      [](nb::handle tensors, const std::optional<Metadata>& metadata) {
        std::string data = ug::io::save_bytes(tensors_from_python(tensors, "save"), metadata.value_or(Metadata{}));
        return nb::bytes(data.data(), data.size());
      },
      "tensors"_a, "metadata"_a = nb::none(), "The safetensors file as bytes.");
  st.def(
      "load",
      [](nb::bytes data) { return tensors_to_python(ug::io::load_bytes(std::string_view(data.c_str(), data.size()))); },
      "data"_a);
  st.def(
      "load_metadata", [](const std::filesystem::path& filename) { return ug::io::load_metadata(filename.string()); },
      "filename"_a, "The file's __metadata__ dict (empty when it has none); reads the header only.");
}

}  // namespace ugpy
