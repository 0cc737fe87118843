/// Bluetooth SIG company identifiers, as they appear in the first two octets (little-endian) of
/// Manufacturer Specific Data (AD type 0xFF) and in LMP/LL version information: the common
/// ones a BLE user meets on Linux (chip vendors, phone and wearable makers, maker boards).
///
/// - SeeAlso: Bluetooth SIG Assigned Numbers, §7.1 (Company Identifiers)
public enum CompanyIdentifiers {
    /// The company's name as the SIG registers it, or nil for an identifier not in this table.
    public static func name(for identifier: UInt16) -> String? { table[identifier] }

    /// Every identifier in the table, ascending.
    public static var allIdentifiers: [UInt16] { table.keys.sorted() }

    static let table: [UInt16: String] = [
        0x0000: "Ericsson AB",
        0x0001: "Nokia Mobile Phones",
        0x0002: "Intel Corp.",
        0x0003: "IBM Corp.",
        0x0006: "Microsoft",
        0x0008: "Motorola",
        0x0009: "Infineon Technologies AG",
        0x000A: "Qualcomm Technologies International, Ltd. (QTIL)",
        0x000D: "Texas Instruments Inc.",
        0x000F: "Broadcom Corporation",
        0x001D: "Qualcomm",
        0x0025: "NXP B.V.",
        0x0030: "ST Microelectronics",
        0x0046: "MediaTek, Inc.",
        0x004C: "Apple, Inc.",
        0x0059: "Nordic Semiconductor ASA",
        0x005D: "Realtek Semiconductor Corporation",
        0x0065: "HP, Inc.",
        0x006B: "Polar Electro OY",
        0x0075: "Samsung Electronics Co. Ltd.",
        0x0078: "Nike, Inc.",
        0x0087: "Garmin International, Inc.",
        0x009E: "Bose Corporation",
        0x00C4: "LG Electronics",
        0x00D2: "Dialog Semiconductor B.V.",
        0x00D7: "Qualcomm Technologies, Inc.",
        0x00E0: "Google",
        0x012D: "Sony Corporation",
        0x0131: "Cypress Semiconductor",
        0x0157: "Anhui Huami Information Technology Co., Ltd.",
        0x0171: "Amazon.com Services LLC",
        0x01DA: "Logitech International SA",
        0x027D: "HUAWEI Technologies Co., Ltd.",
        0x02E5: "Espressif Systems (Shanghai) Co., Ltd.",
        0x02FF: "Silicon Laboratories",
        0x038F: "Xiaomi Inc.",
        0x0499: "Ruuvi Innovations Ltd.",
        0x0822: "adafruit industries",
    ]
}
