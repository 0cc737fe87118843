import Testing
@testable import GATTClientCLI

@Suite struct CommandLineParseTests {
    @Test func dumpWithGlobalOptionsAnywhere() throws {
        let invocation = try parse(["--json", "dump", "cap.btsnoop", "--summary", "--conn", "0x0040", "--timeout=5"])
        var expected = DumpOptions(path: "cap.btsnoop")
        expected.summary = true
        expected.connection = 0x40
        #expect(invocation.command == .dump(expected))
        #expect(invocation.options.json)
        #expect(invocation.options.timeout == 5)
    }

    @Test func handlesInBothForms() throws {
        #expect(try parseHandle("0x0021", what: "h") == 0x21)
        #expect(try parseHandle("33", what: "h") == 33)
        #expect(try parseHandle("0xFFFF", what: "h") == 0xFFFF)
    }

    @Test(arguments: [
        (["dump"], "dump needs a capture file: gattclient dump FILE"),
        (["dump", "a", "b"], "dump takes one file, got 2"),
        (["dump", "a", "--handle", "0"], "--handle needs a handle from 0x0001 to 0xffff (like 0x0021 or 33), not '0'"),
        (["dump", "a", "--handle", "0x10000"], "--handle needs a handle from 0x0001 to 0xffff (like 0x0021 or 33), not '0x10000'"),
        (["dump", "a", "--conn"], "--conn needs a value"),
        (["dump", "a", "--frobnicate"], "unknown option --frobnicate for dump"),
        (["dump", "a", "--indicate"], "dump does not know --indicate"),
        (["dump", "a", "--att-only", "--adv-only"], "--att-only and --adv-only exclude each other"),
        (["--timeout", "-1", "dump", "a"], "--timeout needs a positive number of seconds up to 31536000 (365 days), not '-1'"),
        (["--json=yes", "dump", "a"], "--json takes no value"),
        (["fly"], "unknown command 'fly'; commands: " + commandSummaries.map { String($0.0.prefix { $0 != " " }) }.joined(separator: ", ")),
    ])
    func usageErrors(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try parse(arguments) }
    }

    /// Issue 19 item 9: a misspelled option is reported as itself (not as its value taken for an
    /// argument), with the nearest option or command; a bare `gattclient` is a usage error.
    @Test(arguments: [
        (["--transport", "sim", "scan", "--durration", "1"], "unknown option --durration for scan; did you mean --duration?"),
        (["read", "AA:BB:CC:DD:EE:FF", "0x0003", "--lnog"], "unknown option --lnog for read; did you mean --long?"),
        (["--jsn", "scan"], "unknown option --jsn; did you mean --json?"),
        (["--trasnport", "sim", "demo"], "unknown option --trasnport; did you mean --transport?"),
        (["--frobnicate", "scan"], "unknown option --frobnicate"),
        (["scna"], "unknown command 'scna'; did you mean scan?"),
        (["subscibe"], "unknown command 'subscibe'; did you mean subscribe?"),
        ([], "no command given: try `gattclient demo` (no hardware needed), or `gattclient --help`"),
    ])
    func misspellings(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try parse(arguments) }
    }

    @Test func editDistances() {
        #expect(editDistance("scna", "scan") == 2)
        #expect(editDistance("", "abc") == 3)
        #expect(editDistance("--long", "--long") == 0)
        #expect(didYouMean("zzzzzz", among: ["scan", "read"]) == "")
        #expect(didYouMean("--sum", among: ["--summary"]) == "; did you mean --summary?")
    }

    /// Item 10: hex values say what is wrong with them.
    @Test func hexValues() throws {
        #expect(try parseHexValue("01:00") == [1, 0])
        #expect(throws: UsageError("'012': odd number of hex digits (3); a value is whole octets, like 0012 or 0120")) {
            try parseHexValue("012")
        }
        #expect(throws: UsageError("'0g' is not hex (like 0100 or 01:00)")) { try parseHexValue("0g") }
    }

    @Test func helpAndNothing() throws {
        #expect(try parse(["--help", "dump"]).command == .commandHelp("dump"))
        #expect(usageText.contains("dump FILE"))
    }
}

@Suite struct CommandHelpTests {
    @Test func everyCommandHasHelpWithExamples() throws {
        for (synopsis, _) in commandSummaries {
            let name = String(synopsis.prefix { $0 != " " })
            #expect(try parse([name, "--help"]).command == .commandHelp(name), "\(name)")
            #expect(try parse(["help", name]).command == .commandHelp(name))
            let text = try #require(commandHelpText[name], "\(name) has no help")
            #expect(text.hasPrefix("gattclient \(name)"))
            if name != "demo" { #expect(text.contains("examples:"), "\(name)") }
        }
        #expect(try parse(["--help"]).command == .help)
    }

    @Test func verboseTracesEveryATTPDU() throws {
        #expect(try parse(["-v", "read", "AA:BB:CC:DD:EE:FF", "2A19"]).options.verbosity == 1)
    }
}
