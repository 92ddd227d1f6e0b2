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

/** A str or os.PathLike, which ug.save and ug.load open themselves. */
bool is_path(nb::handle f) { return nb::isinstance<nb::str>(f) || nb::hasattr(f, "__fspath__"); }

std::string path_of(nb::handle f) { return nb::cast<std::filesystem::path>(f).string(); }

}  // namespace

void bind_io(nb::module_& m) {
  m.def(
      "save",
      [](nb::handle obj, nb::handle f, const std::optional<Metadata>& metadata) {
        ug::io::Tree tree = tree_from_python(obj, "save");
        if (is_path(f)) {
          std::string path = path_of(f);
          nb::gil_scoped_release release;
          ug::io::save(tree, path, metadata.value_or(Metadata{}));
          return;
        }
        if (!nb::hasattr(f, "write"))
          throw nb::type_error(("[save] f must be a path or a binary file object with write(), got " +
                                nb::cast<std::string>(nb::str(f.type().attr("__name__"))))
                                   .c_str());
        std::string data;
        {
          nb::gil_scoped_release release;
          data = ug::io::save_tree_bytes(tree, metadata.value_or(Metadata{}));
        }
        f.attr("write")(nb::bytes(data.data(), data.size()));
      },
      "obj"_a, "f"_a, "metadata"_a = nb::none(),
      "Saves obj to a safetensors file (atomically when f is a path; f may also be a binary file object, as "
      "io.BytesIO): a state_dict, or any nesting of dicts (str or int keys), lists and tuples of tensors, None, bool, "
      "int, float and str (a checkpoint). Never pickles.");
  m.def(
      "load",
      [](nb::handle f) {
        ug::io::Tree tree;
        if (is_path(f)) {
          std::string path = path_of(f);
          nb::gil_scoped_release release;
          tree = ug::io::load(path);
        } else {
          if (!nb::hasattr(f, "read"))
            throw nb::type_error(("[load] f must be a path or a binary file object with read(), got " +
                                  nb::cast<std::string>(nb::str(f.type().attr("__name__"))))
                                     .c_str());
          nb::object data = f.attr("read")();
          if (!nb::isinstance<nb::bytes>(data))
            throw nb::type_error("[load] f.read() must return bytes: open the file in binary mode ('rb')");
          auto bytes = nb::borrow<nb::bytes>(data);
          std::string_view view(bytes.c_str(), bytes.size());
          nb::gil_scoped_release release;
          tree = ug::io::load_tree_bytes(view);
        }
        return tree_to_python(tree);
      },
      "f"_a,
      "What ug.save saved (a plain safetensors file: its dict of name -> Tensor), from a path or a binary file "
      "object. Runs no code.");

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
