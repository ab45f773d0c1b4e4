// Tests for base/crypto.cc: known digests and MACs, the strict codecs, constant-time equality,
// Ed25519 verification against RFC 8032's vectors.
#include "base/crypto.h"

#include <catch2/catch.hpp>

namespace hookbox {
namespace {

TEST_CASE("Sha256 of known inputs", "[crypto]") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256("abc").size() == 32);
}

TEST_CASE("Hmac matches RFC 4231 test case 2 and known SHA-1 values", "[crypto]") {
  const std::string key = "Jefe";
  const std::string data = "what do ya want for nothing?";
  CHECK(HexEncode(Hmac(HashAlgorithm::kSha256, key, data)) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(HexEncode(Hmac(HashAlgorithm::kSha512, key, data)) ==
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
        "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737");
  CHECK(HexEncode(Hmac(HashAlgorithm::kSha1, key, data)) ==
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
  // An empty key is still a key (OpenSSL needs a non-null pointer for it).
  CHECK(HexEncode(Hmac(HashAlgorithm::kSha256, "", "")) ==
        "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST_CASE("DigestSize and ParseHashAlgorithm", "[crypto]") {
  CHECK(DigestSize(HashAlgorithm::kSha1) == 20);
  CHECK(DigestSize(HashAlgorithm::kSha256) == 32);
  CHECK(DigestSize(HashAlgorithm::kSha512) == 64);
  CHECK(ParseHashAlgorithm("sha1") == HashAlgorithm::kSha1);
  CHECK(ParseHashAlgorithm("sha512") == HashAlgorithm::kSha512);
  CHECK_FALSE(ParseHashAlgorithm("SHA256"));
  CHECK_FALSE(ParseHashAlgorithm("md5"));
  CHECK_FALSE(ParseHashAlgorithm(""));
}

TEST_CASE("Hex round trips and rejects bad input", "[crypto]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  CHECK(HexDecode(HexEncode(all)) == all);
  CHECK(HexEncode("\x01\xab\xff") == "01abff");
  CHECK(HexDecode("01ABff") == std::string("\x01\xab\xff"));
  CHECK(HexDecode("") == std::string());
  CHECK_FALSE(HexDecode("abc"));  // odd length
  CHECK_FALSE(HexDecode("zz"));   // not hex
  CHECK_FALSE(HexDecode("0g"));
  CHECK_FALSE(HexDecode(" 0a"));
  CHECK_FALSE(HexDecode("0a "));
  CHECK_FALSE(HexDecode("0x0a"));
  CHECK_FALSE(HexDecode("0a:0b"));
  CHECK_FALSE(HexDecode(std::string("0\0", 2)));
}

TEST_CASE("Base64 round trips every length", "[crypto]") {
  std::string data;
  for (int i = 0; i < 70; ++i) {
    std::string encoded = Base64Encode(data);
    CHECK(encoded.size() % 4 == 0);
    CHECK(Base64Decode(encoded) == data);
    data.push_back(static_cast<char>(i * 37));
  }
  CHECK(Base64Encode("") == "");
  CHECK(Base64Encode("f") == "Zg==");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK(Base64Encode("foo") == "Zm9v");
  CHECK(Base64Decode("Zg==") == std::string("f"));
  CHECK(Base64Decode("Zm8=") == std::string("fo"));
  CHECK(Base64Decode("+/+/") == std::string("\xfb\xff\xbf"));
}

TEST_CASE("Base64Decode rejects everything but canonical padded base64", "[crypto]") {
  for (const char* bad : {
           "Zg",      // unpadded
           "Zg=",     // short padding
           "Zg===",   // too much padding
           "Z===",    // three '='
           "====",    // only padding
           "Zm9v\n",  // trailing newline
           " Zm9v",   // leading space (EVP_DecodeBlock would skip it)
           "Zm9v ",   // trailing space
           "Zm 9v",   // whitespace in the middle
           "Zm9\tv",
           "Zg==Zg==",  // padding in the middle
           "Z=g=",
           "Zm9v-_8=",  // URL-safe alphabet
           "Zm9*",
           "QR==",  // non-zero bits under the padding
           "Zm9=",
       }) {
    INFO(bad);
    CHECK_FALSE(Base64Decode(bad));
  }
  CHECK_FALSE(Base64Decode(std::string("Zm9v\0\0\0\0", 8)));
  CHECK(Base64Decode("") == std::string());
}

TEST_CASE("Base64DecodeOptionalPadding: with or without the padding, nothing else", "[crypto]") {
  std::string data;
  for (int i = 0; i < 40; ++i) {
    std::string encoded = Base64Encode(data);
    CHECK(Base64DecodeOptionalPadding(encoded) == data);
    while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
    CHECK(Base64DecodeOptionalPadding(encoded) == data);
    data.push_back(static_cast<char>(i * 53 + 7));
  }
  CHECK(Base64DecodeOptionalPadding("Zg") == std::string("f"));
  CHECK(Base64DecodeOptionalPadding("Zm8") == std::string("fo"));
  for (const char* bad :
       {"Zg=", "Zm9", "Z", "Zm9vZ", "QR", "Zg =", "Zg\n", "Zm9v-_8", "=", "Z=g"}) {
    INFO(bad);
    CHECK_FALSE(Base64DecodeOptionalPadding(bad));
  }
}

TEST_CASE("ConstantTimeEqual", "[crypto]") {
  CHECK(ConstantTimeEqual("", ""));
  CHECK(ConstantTimeEqual("abc", "abc"));
  CHECK(ConstantTimeEqual(std::string("a\0b", 3), std::string("a\0b", 3)));
  CHECK_FALSE(ConstantTimeEqual(std::string("a\0b", 3), std::string("a\0c", 3)));
  CHECK_FALSE(ConstantTimeEqual("abc", "abd"));
  CHECK_FALSE(ConstantTimeEqual("abc", "ab"));  // prefix
  CHECK_FALSE(ConstantTimeEqual("ab", "abc"));
  CHECK_FALSE(ConstantTimeEqual("", "a"));
}

TEST_CASE("Ed25519PublicKey verifies RFC 8032's vectors, and nothing else", "[crypto]") {
  // RFC 8032 section 7.1, TEST 1 (empty message) and TEST 2 (one byte, 0x72).
  auto key1 = Ed25519PublicKey::FromRaw(
      *HexDecode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"));
  auto key2 = Ed25519PublicKey::FromRaw(
      *HexDecode("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"));
  REQUIRE(key1);
  REQUIRE(key2);
  const std::string sig1 = *HexDecode(
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9"
      "b46bd25bf5f0595bbe24655141438e7a100b");
  const std::string sig2 = *HexDecode(
      "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f1"
      "1d8c387b2eaeb4302aeeb00d291612bb0c00");
  CHECK(key1->Verifies("", sig1));
  CHECK(key2->Verifies("\x72", sig2));
  // Another key, message or one bit of the signature: refused.
  CHECK_FALSE(key2->Verifies("", sig1));
  CHECK_FALSE(key1->Verifies("\x72", sig1));
  CHECK_FALSE(key2->Verifies("\x73", sig2));
  std::string flipped = sig2;
  flipped[10] = static_cast<char>(flipped[10] ^ 1);
  CHECK_FALSE(key2->Verifies("\x72", flipped));
  // Wrong lengths are false, not errors.
  CHECK_FALSE(key2->Verifies("\x72", sig2.substr(0, 63)));
  CHECK_FALSE(key2->Verifies("\x72", sig2 + "x"));
  CHECK_FALSE(key2->Verifies("\x72", ""));
  // A key must be 32 bytes.
  CHECK_FALSE(Ed25519PublicKey::FromRaw(""));
  CHECK_FALSE(Ed25519PublicKey::FromRaw(std::string(31, 'k')));
  CHECK_FALSE(Ed25519PublicKey::FromRaw(std::string(33, 'k')));
}

}  // namespace
}  // namespace hookbox
