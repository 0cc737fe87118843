extension HCIOpcode {
    /// Every opcode with a name. The commands issue extends this list.
    static let known: [(HCIOpcode, String)] = []
}
