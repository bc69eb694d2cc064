// A small stand-in for C++23 std::expected: expected failures (bad input, network, API errors)
// travel as values, never as exceptions. Only the operations the project uses are provided.
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace depl {

template <typename E>
class Unexpected {
 public:
  explicit Unexpected(E error) : error_(std::move(error)) {}
  const E& error() const& { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_;
};

template <typename E>
Unexpected<std::decay_t<E>> unexpected(E&& error) {
  return Unexpected<std::decay_t<E>>(std::forward<E>(error));
}

// A plain error: a message meant for the user, already naming what is wrong.
struct Error {
  std::string message;
};

inline Unexpected<Error> error(std::string message) {
  return Unexpected<Error>(Error{std::move(message)});
}

template <typename T, typename E = Error>
class Expected {
 public:
  using value_type = T;
  using error_type = E;

  Expected() requires std::is_default_constructible_v<T> : state_(std::in_place_index<0>) {}
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  template <typename U>
    requires std::is_constructible_v<T, U&&> && (!std::is_same_v<std::decay_t<U>, Expected>) &&
             (!std::is_same_v<std::decay_t<U>, Unexpected<E>>)
  Expected(U&& value) : state_(std::in_place_index<0>, T(std::forward<U>(value))) {}  // NOLINT
  Expected(Unexpected<E> err) : state_(std::in_place_index<1>, std::move(err).error()) {}  // NOLINT

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& {
    assert(!has_value());
    return std::get<1>(state_);
  }
  E&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(state_));
  }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, E> state_;
};

template <typename E>
class Expected<void, E> {
 public:
  Expected() = default;
  Expected(Unexpected<E> err) : error_(std::move(err).error()), ok_(false) {}  // NOLINT

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  void value() const { assert(ok_); }
  const E& error() const& {
    assert(!ok_);
    return error_;
  }

 private:
  E error_{};
  bool ok_ = true;
};

}  // namespace depl
