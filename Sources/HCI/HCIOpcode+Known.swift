/// Named HCI command opcodes (OGF << 10 | OCF) with their Core 5.4 spec names.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.1, §7.3, §7.4, §7.5, §7.8
extension HCIOpcode {
    // Link Control (OGF 0x01), §7.1
    public static let disconnect = HCIOpcode(rawValue: 0x0406)
    public static let readRemoteVersionInformation = HCIOpcode(rawValue: 0x041D)

    // Controller & Baseband (OGF 0x03), §7.3
    public static let setEventMask = HCIOpcode(rawValue: 0x0C01)
    public static let reset = HCIOpcode(rawValue: 0x0C03)
    public static let writeLocalName = HCIOpcode(rawValue: 0x0C13)
    public static let readLocalName = HCIOpcode(rawValue: 0x0C14)
    public static let writeScanEnable = HCIOpcode(rawValue: 0x0C1A)
    public static let setEventMaskPage2 = HCIOpcode(rawValue: 0x0C63)
    public static let writeLEHostSupport = HCIOpcode(rawValue: 0x0C6D)

    // Informational parameters (OGF 0x04), §7.4
    public static let readLocalVersionInformation = HCIOpcode(rawValue: 0x1001)
    public static let readLocalSupportedCommands = HCIOpcode(rawValue: 0x1002)
    public static let readLocalSupportedFeatures = HCIOpcode(rawValue: 0x1003)
    public static let readLocalExtendedFeatures = HCIOpcode(rawValue: 0x1004)
    public static let readBufferSize = HCIOpcode(rawValue: 0x1005)
    public static let readBDADDR = HCIOpcode(rawValue: 0x1009)

    // Status parameters (OGF 0x05), §7.5
    public static let readRSSI = HCIOpcode(rawValue: 0x1405)

    // LE Controller (OGF 0x08), §7.8
    public static let leSetEventMask = HCIOpcode(rawValue: 0x2001)
    public static let leReadBufferSizeV1 = HCIOpcode(rawValue: 0x2002)
    public static let leReadLocalSupportedFeatures = HCIOpcode(rawValue: 0x2003)
    public static let leSetRandomAddress = HCIOpcode(rawValue: 0x2005)
    public static let leSetAdvertisingParameters = HCIOpcode(rawValue: 0x2006)
    public static let leReadAdvertisingPhysicalChannelTxPower = HCIOpcode(rawValue: 0x2007)
    public static let leSetAdvertisingData = HCIOpcode(rawValue: 0x2008)
    public static let leSetScanResponseData = HCIOpcode(rawValue: 0x2009)
    public static let leSetAdvertisingEnable = HCIOpcode(rawValue: 0x200A)
    public static let leSetScanParameters = HCIOpcode(rawValue: 0x200B)
    public static let leSetScanEnable = HCIOpcode(rawValue: 0x200C)
    public static let leCreateConnection = HCIOpcode(rawValue: 0x200D)
    public static let leCreateConnectionCancel = HCIOpcode(rawValue: 0x200E)
    public static let leReadFilterAcceptListSize = HCIOpcode(rawValue: 0x200F)
    public static let leClearFilterAcceptList = HCIOpcode(rawValue: 0x2010)
    public static let leAddDeviceToFilterAcceptList = HCIOpcode(rawValue: 0x2011)
    public static let leRemoveDeviceFromFilterAcceptList = HCIOpcode(rawValue: 0x2012)
    public static let leConnectionUpdate = HCIOpcode(rawValue: 0x2013)
    public static let leReadRemoteFeatures = HCIOpcode(rawValue: 0x2016)
    public static let leRand = HCIOpcode(rawValue: 0x2018)
    public static let leEnableEncryption = HCIOpcode(rawValue: 0x2019)
    public static let leLongTermKeyRequestReply = HCIOpcode(rawValue: 0x201A)
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(rawValue: 0x201B)
    public static let leReadSupportedStates = HCIOpcode(rawValue: 0x201C)
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(rawValue: 0x2020)
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(rawValue: 0x2021)
    public static let leSetDataLength = HCIOpcode(rawValue: 0x2022)
    public static let leReadSuggestedDefaultDataLength = HCIOpcode(rawValue: 0x2023)
    public static let leWriteSuggestedDefaultDataLength = HCIOpcode(rawValue: 0x2024)
    public static let leAddDeviceToResolvingList = HCIOpcode(rawValue: 0x2027)
    public static let leClearResolvingList = HCIOpcode(rawValue: 0x2029)
    public static let leSetAddressResolutionEnable = HCIOpcode(rawValue: 0x202D)
    public static let leReadMaximumDataLength = HCIOpcode(rawValue: 0x202F)
    public static let leReadPHY = HCIOpcode(rawValue: 0x2030)
    public static let leSetDefaultPHY = HCIOpcode(rawValue: 0x2031)
    public static let leSetPHY = HCIOpcode(rawValue: 0x2032)
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(rawValue: 0x2035)
    public static let leSetExtendedAdvertisingParametersV1 = HCIOpcode(rawValue: 0x2036)
    public static let leSetExtendedAdvertisingData = HCIOpcode(rawValue: 0x2037)
    public static let leSetExtendedScanResponseData = HCIOpcode(rawValue: 0x2038)
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(rawValue: 0x2039)
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(rawValue: 0x203A)
    public static let leReadNumberOfSupportedAdvertisingSets = HCIOpcode(rawValue: 0x203B)
    public static let leRemoveAdvertisingSet = HCIOpcode(rawValue: 0x203C)
    public static let leClearAdvertisingSets = HCIOpcode(rawValue: 0x203D)
    public static let leSetExtendedScanParameters = HCIOpcode(rawValue: 0x2041)
    public static let leSetExtendedScanEnable = HCIOpcode(rawValue: 0x2042)
    public static let leExtendedCreateConnectionV1 = HCIOpcode(rawValue: 0x2043)
    public static let leReadBufferSizeV2 = HCIOpcode(rawValue: 0x2060)
    public static let leSetExtendedAdvertisingParametersV2 = HCIOpcode(rawValue: 0x207F)
    public static let leExtendedCreateConnectionV2 = HCIOpcode(rawValue: 0x2085)

    /// The opcodes this module sends, with their spec names (`HCI_` prefix); part of `HCIOpcode.names`,
    /// where `HCICommandNames` names every other standard command.
    static let known: [(HCIOpcode, String)] = [
        (.disconnect, "HCI_Disconnect"),
        (.readRemoteVersionInformation, "HCI_Read_Remote_Version_Information"),
        (.setEventMask, "HCI_Set_Event_Mask"),
        (.reset, "HCI_Reset"),
        (.writeLocalName, "HCI_Write_Local_Name"),
        (.readLocalName, "HCI_Read_Local_Name"),
        (.writeScanEnable, "HCI_Write_Scan_Enable"),
        (.setEventMaskPage2, "HCI_Set_Event_Mask_Page_2"),
        (.writeLEHostSupport, "HCI_Write_LE_Host_Support"),
        (.readLocalVersionInformation, "HCI_Read_Local_Version_Information"),
        (.readLocalSupportedCommands, "HCI_Read_Local_Supported_Commands"),
        (.readLocalSupportedFeatures, "HCI_Read_Local_Supported_Features"),
        (.readLocalExtendedFeatures, "HCI_Read_Local_Extended_Features"),
        (.readBufferSize, "HCI_Read_Buffer_Size"),
        (.readBDADDR, "HCI_Read_BD_ADDR"),
        (.readRSSI, "HCI_Read_RSSI"),
        (.leSetEventMask, "HCI_LE_Set_Event_Mask"),
        (.leReadBufferSizeV1, "HCI_LE_Read_Buffer_Size [v1]"),
        (.leReadLocalSupportedFeatures, "HCI_LE_Read_Local_Supported_Features"),
        (.leSetRandomAddress, "HCI_LE_Set_Random_Address"),
        (.leSetAdvertisingParameters, "HCI_LE_Set_Advertising_Parameters"),
        (.leReadAdvertisingPhysicalChannelTxPower, "HCI_LE_Read_Advertising_Physical_Channel_Tx_Power"),
        (.leSetAdvertisingData, "HCI_LE_Set_Advertising_Data"),
        (.leSetScanResponseData, "HCI_LE_Set_Scan_Response_Data"),
        (.leSetAdvertisingEnable, "HCI_LE_Set_Advertising_Enable"),
        (.leSetScanParameters, "HCI_LE_Set_Scan_Parameters"),
        (.leSetScanEnable, "HCI_LE_Set_Scan_Enable"),
        (.leCreateConnection, "HCI_LE_Create_Connection"),
        (.leCreateConnectionCancel, "HCI_LE_Create_Connection_Cancel"),
        (.leReadFilterAcceptListSize, "HCI_LE_Read_Filter_Accept_List_Size"),
        (.leClearFilterAcceptList, "HCI_LE_Clear_Filter_Accept_List"),
        (.leAddDeviceToFilterAcceptList, "HCI_LE_Add_Device_To_Filter_Accept_List"),
        (.leRemoveDeviceFromFilterAcceptList, "HCI_LE_Remove_Device_From_Filter_Accept_List"),
        (.leConnectionUpdate, "HCI_LE_Connection_Update"),
        (.leReadRemoteFeatures, "HCI_LE_Read_Remote_Features"),
        (.leRand, "HCI_LE_Rand"),
        (.leEnableEncryption, "HCI_LE_Enable_Encryption"),
        (.leLongTermKeyRequestReply, "HCI_LE_Long_Term_Key_Request_Reply"),
        (.leLongTermKeyRequestNegativeReply, "HCI_LE_Long_Term_Key_Request_Negative_Reply"),
        (.leReadSupportedStates, "HCI_LE_Read_Supported_States"),
        (.leRemoteConnectionParameterRequestReply, "HCI_LE_Remote_Connection_Parameter_Request_Reply"),
        (.leRemoteConnectionParameterRequestNegativeReply, "HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply"),
        (.leSetDataLength, "HCI_LE_Set_Data_Length"),
        (.leReadSuggestedDefaultDataLength, "HCI_LE_Read_Suggested_Default_Data_Length"),
        (.leWriteSuggestedDefaultDataLength, "HCI_LE_Write_Suggested_Default_Data_Length"),
        (.leAddDeviceToResolvingList, "HCI_LE_Add_Device_To_Resolving_List"),
        (.leClearResolvingList, "HCI_LE_Clear_Resolving_List"),
        (.leSetAddressResolutionEnable, "HCI_LE_Set_Address_Resolution_Enable"),
        (.leReadMaximumDataLength, "HCI_LE_Read_Maximum_Data_Length"),
        (.leReadPHY, "HCI_LE_Read_PHY"),
        (.leSetDefaultPHY, "HCI_LE_Set_Default_PHY"),
        (.leSetPHY, "HCI_LE_Set_PHY"),
        (.leSetAdvertisingSetRandomAddress, "HCI_LE_Set_Advertising_Set_Random_Address"),
        (.leSetExtendedAdvertisingParametersV1, "HCI_LE_Set_Extended_Advertising_Parameters [v1]"),
        (.leSetExtendedAdvertisingData, "HCI_LE_Set_Extended_Advertising_Data"),
        (.leSetExtendedScanResponseData, "HCI_LE_Set_Extended_Scan_Response_Data"),
        (.leSetExtendedAdvertisingEnable, "HCI_LE_Set_Extended_Advertising_Enable"),
        (.leReadMaximumAdvertisingDataLength, "HCI_LE_Read_Maximum_Advertising_Data_Length"),
        (.leReadNumberOfSupportedAdvertisingSets, "HCI_LE_Read_Number_of_Supported_Advertising_Sets"),
        (.leRemoveAdvertisingSet, "HCI_LE_Remove_Advertising_Set"),
        (.leClearAdvertisingSets, "HCI_LE_Clear_Advertising_Sets"),
        (.leSetExtendedScanParameters, "HCI_LE_Set_Extended_Scan_Parameters"),
        (.leSetExtendedScanEnable, "HCI_LE_Set_Extended_Scan_Enable"),
        (.leExtendedCreateConnectionV1, "HCI_LE_Extended_Create_Connection [v1]"),
        (.leReadBufferSizeV2, "HCI_LE_Read_Buffer_Size [v2]"),
        (.leSetExtendedAdvertisingParametersV2, "HCI_LE_Set_Extended_Advertising_Parameters [v2]"),
        (.leExtendedCreateConnectionV2, "HCI_LE_Extended_Create_Connection [v2]"),
    ]

    /// The spec name without `HCI_` and underscores, as btmon prints it: `"LE Set Scan Enable"`;
    /// `"Vendor command 0xfc01"` for OGF 0x3F, `"Unknown command 0x2004"` for any other opcode without a name.
    public var displayName: String {
        guard let name = HCIOpcode.names[rawValue] else {
            return (isVendorSpecific ? "Vendor command " : "Unknown command ") + hexCode
        }
        // Octet by octet into the new string (the names are ASCII): no Character walk.
        let utf8 = name.utf8.dropFirst(name.hasPrefix("HCI_") ? 4 : 0)
        return String(unsafeUninitializedCapacity: utf8.count) { buffer in
            var index = 0
            for octet in utf8 {
                buffer[index] = octet == UInt8(ascii: "_") ? UInt8(ascii: " ") : octet
                index += 1
            }
            return index
        }
    }
}
