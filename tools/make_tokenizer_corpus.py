#!/usr/bin/python3
"""Writes tests/data/tokenizer_corpus/: the texts tests/cli/tokenizer_reference.sh tokenizes with
tqlab and with Hugging Face's own implementations, and compares. Each file is one kind of text a
tokenizer gets wrong first; files named invalid_* are not UTF-8 (the reference cannot take them:
the test checks properties instead). Run again after editing; the files are committed.

    make_tokenizer_corpus.py OUT_DIR
"""

import sys
from pathlib import Path

PROSE = (
    "The quick brown fox jumps over the lazy dog. It's a truth universally acknowledged that a single man "
    "in possession of a good fortune must be in want of a wife. They're here; we've gone; I'm sure you'll "
    "see, he'd said. IT'S LOUD, WE'RE DONE, YOU'VE WON, I'M OUT, WE'LL SEE, SHE'D KNOW.\n\n"
    "\"Quoted text,\" she said -- and then, (parenthetically) [bracketed] {braced}: semicolons; colons...\n"
    "Mr. Smith's dog's bone isn't theirs; it's the neighbours' -- don't you think?\n"
)

CODE = (
    "#include <vector>\n\nint main(int argc, char** argv) {\n"
    "\tstd::vector<int> values{1, 2, 3};\n"
    "\tfor (auto& v : values) v *= 2;  // double them\n"
    "\treturn values.size() > 2 ? 0 : 1;\n}\n\n"
    "def fibonacci(n: int) -> int:\n    if n < 2:\n        return n\n"
    "    return fibonacci(n - 1) + fibonacci(n - 2)\n\n"
    "x = {'key': [1, 2.5, -3e10], \"other\": None}  # a dict\n"
    "if (a&&b||!c) { y = a<<2 | b>>3 ^ ~c; }\n"
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;\n"
    "    \t  mixed indentation\n"
)

NUMBERS = (
    "1 12 123 1234 12345 123456 1234567 12345678901234567890\n"
    "3.14159 2.71828 -0.5 +7 1e-9 6.022e23 0x1F 0b1010 1,000,000 1.000.000,00\n"
    "2024-01-31 12:34:56 +1 (555) 010-9999 version 1.2.3-rc4 v10\n"
    "\u0661\u0662\u0663 \u0966\u0967\u0968 \uff11\uff12\uff13 \u2460\u2461 \u00bd \u00b2 \u2167\n"
    "0000000000000000000000000000000000000000000000000000000000000001\n"
)

WHITESPACE = (
    "two  spaces   three    four\ttab\t\ttabs \t mixed\n"
    "   leading spaces\ntrailing spaces   \n\n\n\nblank lines above\n"
    "no-break\u00a0space ideographic\u3000space thin\u2009space en\u2002space\n"
    "line\u2028separator paragraph\u2029separator next\u0085line\n"
    "zero\u200bwidth joiner\u200dnon-joiner\u200cword byte-order\ufeffmark\n"
    "\x0bvertical tab\x0cform feed\n"
    "                \n"
    "\t\t\t\t\n"
)

NEWLINES = "windows\r\nline\r\nendings\r\n\r\nold mac\rline\rendings\r\rmixed\n\r\n\r\rend\r\n"

CJK = (
    "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8\u3002\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c"
    "\u6211\u4eec\u53bb\u516c\u56ed\u5427\uff01\n"
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca\u3068"
    "\u3072\u3089\u304c\u306a\u3002\u6771\u4eac\u30bf\u30ef\u30fc\n"
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694!\n"
    "\u4e2d\u6587English\u6df7\u5408mixed\u6587\u672c123\u6570\u5b57\n"
    "\uff08\u5168\u89d2\u62ec\u53f7\uff09\u300c\u5f15\u53f7\u300d\u3010\u6807\u9898\u3011\n"
)

EMOJI = (
    "smile \U0001F600 heart \u2764\ufe0f thumbs \U0001F44D\U0001F3FD\n"
    "family \U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 "
    "couple \U0001F469\u200d\u2764\ufe0f\u200d\U0001F48B\u200d\U0001F468\n"
    "flags \U0001F1EF\U0001F1F5\U0001F1FA\U0001F1F8\U0001F1E9\U0001F1EA keycap 1\ufe0f\u20e3 #\ufe0f\u20e3\n"
    "rainbow flag \U0001F3F3\ufe0f\u200d\U0001F308 pirate \U0001F3F4\u200d\u2620\ufe0f\n"
    "\U0001F680\U0001F680\U0001F680\U0001F525\U0001F525 text\U0001F389between\U0001F389\n"
    "astral math \U0001D400\U0001D401 \U0001D538 cuneiform \U00012000\n"
)

COMBINING = (
    "decomposed: e\u0301 a\u0300 o\u0308 n\u0303 c\u0327 -> caf\u00e9 vs cafe\u0301\n"
    "Vietnamese: Vi\u1ec7t Nam, Vie\u0323\u0302t Nam, ti\u1ebfng Vi\u1ec7t\n"
    "zalgo: Z\u0351\u036b\u0343a\u0352\u0361l\u0315g\u0334o\u0327\n"
    "angstrom \u212b vs \u00c5 vs A\u030a; ohm \u2126; kelvin \u212a\n"
    "hangul jamo: \u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af\n"
    "order: a\u0323\u0307 vs a\u0307\u0323; \u0f40\u0f74\u0f72\n"
    "compat: \ufb01 \u2460 \uff21 (NFC keeps them)\n"
    "lonely marks: \u0301\u0301 start\n"
)

RTL = (
    "\u0627\u0644\u0633\u0644\u0627\u0645 \u0639\u0644\u064a\u0643\u0645 \u0648\u0631\u062d\u0645\u0629 "
    "\u0627\u0644\u0644\u0647. \u0627\u0644\u0639\u062f\u062f 123 \u0648 \u0664\u0665\u0666\n"
    "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd \u05e2\u05d5\u05b9\u05dc\u05b8\u05dd! "
    "\u05e2\u05d1\u05e8\u05d9\u05ea with English \u05d1\u05d0\u05de\u05e6\u05e2\n"
    "marks \u200fRLM\u200f \u200eLRM\u200e \u202bembedding\u202c \u2067isolate\u2069\n"
    "\u0641\u0627\u0631\u0633\u06cc \u06a9\u062a\u0627\u0628\u200c\u0647\u0627\n"
)

SPECIAL_TOKENS = (
    "<|begin_of_text|>Hello<|end_of_text|>\n"
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
    "<s>[INST] question [/INST] answer</s><s> again </s>\n"
    "<unk> < s> <s > <<s>> </s></s> <|im_sta <|im_start| <|im_start|><|im_end|>\n"
    "<|reserved_special_token_5|> <|eot_id|> <|start_header_id|>user<|end_header_id|>\n"
    "<think>reasoning</think> <tool_call>{}</tool_call> <|endoftext|>\n"
    "text<s>glued</s>text <|im_start|>assistant<|im_end|>\n"
)

MIXED = (
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0394\u03b9\u03ba\u03b1\u03b9\u03bf"
    "\u03c3\u03cd\u03bd\u03b7. \u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e\n"
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a\u0e1c\u0e21\u0e0a\u0e37\u0e48\u0e2d\n"
    "Stra\u00dfe STRASSE \u0130stanbul \u0131s\u0131k \u0049\u0307\n"
    "IT'S it\u2019s it'\u017f IT'\u212a we'VE O'Neil rock'n'roll\n"
    "\u00c6sir \u00d8re \u0141\u00f3d\u017a \u010ce\u0161tina \u00e6\u00f8\u00e5\n"
)

# Where Unicode's white space, JavaScript's \s and Oniguruma's \s could part ways: NEL, BOM,
# no-break spaces, Ogham space, the Mongolian vowel separator, zero-width space, line separator.
UNICODE_SPACES = (
    "!\u0085x a \u0085\u0085 b x\u0085\u0085\n \u0085 a\ufeff\ufeffb !\ufeff a\u00a0\u00a0b\u00a0 "
    "a\u1680b a\u180eb \u200b\u200b a x\u2028\u2028y \u3000\u3000z\n"
)

CONTROL = (
    "nul\x00byte and two\x00\x00nuls\n"
    "controls \x01\x02\x03\x1b[31mred\x1b[0m del\x7f bell\x07 backspace\x08\n"
    "C1 \u0080\u0081\u009f end\n"
    "\x00leading nul and trailing nul\x00"
)

PUNCTUATION = (
    "\u201cdouble\u201d \u2018single\u2019 \u00abguillemets\u00bb \u201elow\u201c "
    "em\u2014dash en\u2013dash ellipsis\u2026\n"
    "math: \u2200x\u2208\u211d, x\u00b2\u22650 \u2211 \u222b \u221a2 \u2260 \u2248 \u00b1 \u00d7 \u00f7\n"
    "currency: $5 \u20ac10 \u00a320 \u00a5300 \u20b9400 \u20bf0.1\n"
    "!!! ??? ... --- *** ### @@@ %%% ^^^ &&& ||| ~~~ ``` '' \"\"\n"
    "a.b,c;d:e!f?g(h)i[j]k{l}m<n>o/p\\q|r_s-t+u=v*w&x^y%z$\n"
)


def long_runs():
    word = "supercalifragilisticexpialidocious"
    return (
        "a" * 3000 + "\n" + " " * 2000 + "x\n" + "1" * 1500 + "\n" + "!" * 800 + "\n"
        + word * 60 + "\n" + ("ab" * 1000) + "\n" + "\t" * 300 + "\n" + "\n" * 200
        + "\u6f22" * 700 + "\n" + "\U0001F600" * 300 + "\n" + "e\u0301" * 300 + "\n"
        + ("the cat sat on the mat. " * 200) + "\n"
    )


TEXTS = {
    "english_prose": PROSE,
    "code": CODE,
    "numbers": NUMBERS,
    "whitespace": WHITESPACE,
    "newlines_crlf": NEWLINES,
    "cjk": CJK,
    "emoji_zwj": EMOJI,
    "combining_marks": COMBINING,
    "right_to_left": RTL,
    "special_tokens": SPECIAL_TOKENS,
    "mixed_languages": MIXED,
    "control_characters": CONTROL,
    "unicode_spaces": UNICODE_SPACES,
    "punctuation": PUNCTUATION,
    "long_runs": long_runs(),
    "single_letter": "a",
    "leading_space": " hello world",
    "only_newline": "\n",
    "only_spaces": "     ",
}

# Not UTF-8: stray continuation bytes, truncated sequences, overlong forms, surrogates, values above
# U+10FFFF and bytes that never occur in UTF-8, between valid text and special-token strings.
INVALID = {
    "invalid_utf8_bytes": b"abc\xff\xfe def \x80\x80 caf\xc3 overlong \xc0\xaf surrogate \xed\xa0\x80 "
                          b"too big \xf4\x90\x80\x80 truncated \xe6\x97 end \xf0\x9f\x98\n"
                          b"\xe6\x97\xa5\xe6\x9c\xac valid then \xfe\xfe\xfe run of bad\n",
    "invalid_utf8_with_specials": b"<|im_start|>\xff<|im_end|><s>\xfe</s><|begin_of_text|>\x80 tail\xc3\n",
    "invalid_utf8_only": b"\x80\x81\x82\xff",
}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in TEXTS.items():
        (out / f"{name}.txt").write_bytes(text.encode("utf-8"))
    for name, data in INVALID.items():
        try:
            data.decode("utf-8")
            raise SystemExit(f"{name} is valid UTF-8: it must not be")
        except UnicodeDecodeError:
            pass
        (out / f"{name}.txt").write_bytes(data)


if __name__ == "__main__":
    main()
