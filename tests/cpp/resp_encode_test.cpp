// Connection::encode: the RESP bytes of a command, appended to a buffer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/connection.h"

using polylimit::Argv;
using polylimit::Connection;

TEST(RespEncode, ArraysOfBulkStrings) {
  std::string out;
  Connection::encode(out, Argv{"GET", "k"});
  EXPECT_EQ(out, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
}

TEST(RespEncode, EmptyAndBinaryArguments) {
  std::string out;
  const std::string binary("a\0\r\nb", 5);
  Connection::encode(out, Argv{"", binary});
  EXPECT_EQ(out, std::string("*2\r\n$0\r\n\r\n$5\r\n") + binary + "\r\n");
}

TEST(RespEncode, LengthsOfEveryWidthAndAppending) {
  // Lengths with 1 to 5 digits, around each power of ten, and a buffer that
  // already holds a command (pipelines append one command after another).
  std::string out = "*1\r\n$4\r\nPING\r\n";
  const std::string before = out;
  std::string expected = before;
  std::vector<std::string> args;
  for (size_t n : {9u, 10u, 99u, 100u, 999u, 1000u, 12345u}) args.emplace_back(n, 'x');
  Argv argv(args.begin(), args.end());
  expected += "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) expected += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  Connection::encode(out, argv);
  EXPECT_EQ(out, expected);
  Argv many(12, "v");
  std::string twelve;
  Connection::encode(twelve, many);
  EXPECT_EQ(twelve.substr(0, 5), "*12\r\n");
  EXPECT_EQ(twelve.size(), 5 + 12 * std::string("$1\r\nv\r\n").size());
}
