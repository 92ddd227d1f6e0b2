#include "tree_convert.h"

#include <string>

#include "ug/io/tree_file.h"

namespace ugpy {
namespace {

using ug::io::Tree;

std::string name_of_type(nb::handle h) { return nb::inst_name(h).c_str(); }

/** Where a value sits, for messages: "obj", "obj['optimizer']['state'][0]". */
std::string child(const std::string& where, nb::handle key) {
  return where + "[" + nb::cast<std::string>(nb::repr(key)) + "]";
}

int64_t int_from_python(nb::handle h, const std::string& where, const char* op) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow != 0)
    ug::fail<ug::ValueError>("[", op, "] ", where, " = ", nb::cast<std::string>(nb::repr(h)),
                             " does not fit in a 64-bit int");
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

Tree from_python(nb::handle h, const std::string& where, int depth, const char* op) {
  if (h.is_none()) return Tree();
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True;
  if (PyLong_Check(h.ptr())) return int_from_python(h, where, op);
  if (PyFloat_Check(h.ptr())) return PyFloat_AsDouble(h.ptr());
  if (PyUnicode_Check(h.ptr())) return nb::cast<std::string>(h);
  if (nb::isinstance<ug::Tensor>(h)) return nb::cast<ug::Tensor>(h);
  // Held for the process's life: a static nb::object would be released after Python is gone.
  static nb::handle mapping = nb::object(nb::module_::import_("collections.abc").attr("Mapping")).release();
  const bool is_list = PyList_Check(h.ptr()), is_tuple = PyTuple_Check(h.ptr());
  const bool is_dict = PyDict_Check(h.ptr()) || (!is_list && !is_tuple && nb::isinstance(h, mapping));
  if (!is_dict && !is_list && !is_tuple)
    ug::fail<ug::TypeError>("[", op, "] cannot save ", where, ", a ", name_of_type(h),
                            ": only tensors, None, bool, int, float, str and lists, tuples and dicts of them are "
                            "saved (no pickled objects)");
  // A self-containing list would otherwise recurse forever.
  if (depth >= ug::io::kMaxTreeDepth)
    ug::fail<ug::ValueError>("[", op, "] ", where, " nests containers deeper than ", ug::io::kMaxTreeDepth,
                             " levels (does it contain itself?)");
  if (is_dict) {
    Tree out = Tree::dict();
    out.entries().reserve(nb::len(h));
    for (nb::handle k : nb::iter(h)) {
      std::string at = child(where, k);
      Tree::Key key;
      if (PyUnicode_Check(k.ptr())) key = nb::cast<std::string>(k);
      else if (PyLong_Check(k.ptr()) && !PyBool_Check(k.ptr())) key = int_from_python(k, at, op);
      else
        ug::fail<ug::TypeError>("[", op, "] ", where, " has the key ", nb::cast<std::string>(nb::repr(k)), ", a ",
                                name_of_type(k), ": dict keys must be str or int");
      // A mapping's keys are unique, so no lookup is needed.
      out.entries().emplace_back(std::move(key), from_python(h[k], at, depth + 1, op));
    }
    return out;
  }
  Tree::List items;
  items.reserve(nb::len(h));
  size_t i = 0;
  for (nb::handle item : nb::iter(h))
    items.push_back(from_python(item, where + "[" + std::to_string(i++) + "]", depth + 1, op));
  return is_list ? Tree::list(std::move(items)) : Tree::tuple(std::move(items));
}

}  // namespace

Tree tree_from_python(nb::handle obj, const char* op, const char* name) { return from_python(obj, name, 0, op); }

nb::object tree_to_python(const Tree& t) {
  switch (t.kind()) {
    case Tree::Kind::None: return nb::none();
    case Tree::Kind::Bool: return nb::bool_(t.as_bool());
    case Tree::Kind::Int: return nb::int_(t.as_int());
    case Tree::Kind::Float: return nb::float_(t.as_double());
    case Tree::Kind::String: return nb::str(t.as_string().data(), t.as_string().size());
    case Tree::Kind::Tensor: return nb::cast(t.as_tensor());
    case Tree::Kind::List:
    case Tree::Kind::Tuple: {
      nb::list items;
      for (const Tree& item : t.items()) items.append(tree_to_python(item));
      return t.kind() == Tree::Kind::List ? nb::object(items) : nb::object(nb::tuple(items));
    }
    case Tree::Kind::Dict: {
      nb::dict out;
      for (const auto& [key, value] : t.entries()) {
        nb::object k = std::holds_alternative<int64_t>(key)
                           ? nb::object(nb::int_(std::get<int64_t>(key)))
                           : nb::object(nb::str(std::get<std::string>(key).data(), std::get<std::string>(key).size()));
        out[k] = tree_to_python(value);
      }
      return out;
    }
  }
  return nb::none();
}

}  // namespace ugpy
