// Bluetooth SIG Assigned Numbers: 16-bit UUIDs for GATT services (§3.4), declarations (§3.5),
// descriptors (§3.6) and characteristics (§3.8), as `XXXX K Name` lines
// (K: s service, a declaration, d descriptor, c characteristic). Facts restated, not copied code.

extension GATTNames {
    static let sigTable = """
        1800 s Generic Access
        1801 s Generic Attribute
        1802 s Immediate Alert
        1803 s Link Loss
        1804 s Tx Power
        1805 s Current Time
        1806 s Reference Time Update
        1807 s Next DST Change
        1808 s Glucose
        1809 s Health Thermometer
        180A s Device Information
        180D s Heart Rate
        180E s Phone Alert Status
        180F s Battery
        1810 s Blood Pressure
        1811 s Alert Notification
        1812 s Human Interface Device
        1813 s Scan Parameters
        1814 s Running Speed and Cadence
        1815 s Automation IO
        1816 s Cycling Speed and Cadence
        1818 s Cycling Power
        1819 s Location and Navigation
        181A s Environmental Sensing
        181B s Body Composition
        181C s User Data
        181D s Weight Scale
        181E s Bond Management
        181F s Continuous Glucose Monitoring
        1820 s Internet Protocol Support
        1821 s Indoor Positioning
        1822 s Pulse Oximeter
        1823 s HTTP Proxy
        1824 s Transport Discovery
        1825 s Object Transfer
        1826 s Fitness Machine
        1827 s Mesh Provisioning
        1828 s Mesh Proxy
        1829 s Reconnection Configuration
        183A s Insulin Delivery
        183B s Binary Sensor
        183C s Emergency Configuration
        183D s Authorization Control
        183E s Physical Activity Monitor
        183F s Elapsed Time
        1840 s Generic Health Sensor
        1843 s Audio Input Control
        1844 s Volume Control
        1845 s Volume Offset Control
        1846 s Coordinated Set Identification
        1847 s Device Time
        1848 s Media Control
        1849 s Generic Media Control
        184A s Constant Tone Extension
        184B s Telephone Bearer
        184C s Generic Telephone Bearer
        184D s Microphone Control
        184E s Audio Stream Control
        184F s Broadcast Audio Scan
        1850 s Published Audio Capabilities
        1851 s Basic Audio Announcement
        1852 s Broadcast Audio Announcement
        1853 s Common Audio
        1854 s Hearing Access
        1855 s Telephony and Media Audio
        1856 s Public Broadcast Announcement
        1857 s Electronic Shelf Label
        1858 s Gaming Audio
        1859 s Mesh Proxy Solicitation
        185A s Industrial Measurement Device
        185B s Ranging
        2800 a Primary Service
        2801 a Secondary Service
        2802 a Include
        2803 a Characteristic
        2900 d Characteristic Extended Properties
        2901 d Characteristic User Description
        2902 d Client Characteristic Configuration
        2903 d Server Characteristic Configuration
        2904 d Characteristic Presentation Format
        2905 d Characteristic Aggregate Format
        2906 d Valid Range
        2907 d External Report Reference
        2908 d Report Reference
        2909 d Number of Digitals
        290A d Value Trigger Setting
        290B d Environmental Sensing Configuration
        290C d Environmental Sensing Measurement
        290D d Environmental Sensing Trigger Setting
        290E d Time Trigger Setting
        290F d Complete BR-EDR Transport Block Data
        2910 d Observation Schedule
        2911 d Valid Range and Accuracy
        2912 d Measurement Description
        2913 d Manufacturer Limits
        2914 d Process Tolerances
        2915 d IMD Trigger Setting
        2A00 c Device Name
        2A01 c Appearance
        2A02 c Peripheral Privacy Flag
        2A03 c Reconnection Address
        2A04 c Peripheral Preferred Connection Parameters
        2A05 c Service Changed
        2A06 c Alert Level
        2A07 c Tx Power Level
        2A08 c Date Time
        2A09 c Day of Week
        2A0A c Day Date Time
        2A0C c Exact Time 256
        2A0D c DST Offset
        2A0E c Time Zone
        2A0F c Local Time Information
        2A11 c Time with DST
        2A12 c Time Accuracy
        2A13 c Time Source
        2A14 c Reference Time Information
        2A16 c Time Update Control Point
        2A17 c Time Update State
        2A18 c Glucose Measurement
        2A19 c Battery Level
        2A1C c Temperature Measurement
        2A1D c Temperature Type
        2A1E c Intermediate Temperature
        2A21 c Measurement Interval
        2A22 c Boot Keyboard Input Report
        2A23 c System ID
        2A24 c Model Number String
        2A25 c Serial Number String
        2A26 c Firmware Revision String
        2A27 c Hardware Revision String
        2A28 c Software Revision String
        2A29 c Manufacturer Name String
        2A2A c IEEE 11073-20601 Regulatory Certification Data List
        2A2B c Current Time
        2A2C c Magnetic Declination
        2A31 c Scan Refresh
        2A32 c Boot Keyboard Output Report
        2A33 c Boot Mouse Input Report
        2A34 c Glucose Measurement Context
        2A35 c Blood Pressure Measurement
        2A36 c Intermediate Cuff Pressure
        2A37 c Heart Rate Measurement
        2A38 c Body Sensor Location
        2A39 c Heart Rate Control Point
        2A3F c Alert Status
        2A40 c Ringer Control Point
        2A41 c Ringer Setting
        2A42 c Alert Category ID Bit Mask
        2A43 c Alert Category ID
        2A44 c Alert Notification Control Point
        2A45 c Unread Alert Status
        2A46 c New Alert
        2A47 c Supported New Alert Category
        2A48 c Supported Unread Alert Category
        2A49 c Blood Pressure Feature
        2A4A c HID Information
        2A4B c Report Map
        2A4C c HID Control Point
        2A4D c Report
        2A4E c Protocol Mode
        2A4F c Scan Interval Window
        2A50 c PnP ID
        2A51 c Glucose Feature
        2A52 c Record Access Control Point
        2A53 c RSC Measurement
        2A54 c RSC Feature
        2A55 c SC Control Point
        2A5A c Aggregate
        2A5B c CSC Measurement
        2A5C c CSC Feature
        2A5D c Sensor Location
        2A5E c PLX Spot-Check Measurement
        2A5F c PLX Continuous Measurement
        2A60 c PLX Features
        2A63 c Cycling Power Measurement
        2A64 c Cycling Power Vector
        2A65 c Cycling Power Feature
        2A66 c Cycling Power Control Point
        2A67 c Location and Speed
        2A68 c Navigation
        2A69 c Position Quality
        2A6A c LN Feature
        2A6B c LN Control Point
        2A6C c Elevation
        2A6D c Pressure
        2A6E c Temperature
        2A6F c Humidity
        2A70 c True Wind Speed
        2A71 c True Wind Direction
        2A72 c Apparent Wind Speed
        2A73 c Apparent Wind Direction
        2A74 c Gust Factor
        2A75 c Pollen Concentration
        2A76 c UV Index
        2A77 c Irradiance
        2A78 c Rainfall
        2A79 c Wind Chill
        2A7A c Heat Index
        2A7B c Dew Point
        2A7D c Descriptor Value Changed
        2A7E c Aerobic Heart Rate Lower Limit
        2A7F c Aerobic Threshold
        2A80 c Age
        2A81 c Anaerobic Heart Rate Lower Limit
        2A82 c Anaerobic Heart Rate Upper Limit
        2A83 c Anaerobic Threshold
        2A84 c Aerobic Heart Rate Upper Limit
        2A85 c Date of Birth
        2A86 c Date of Threshold Assessment
        2A87 c Email Address
        2A88 c Fat Burn Heart Rate Lower Limit
        2A89 c Fat Burn Heart Rate Upper Limit
        2A8A c First Name
        2A8B c Five Zone Heart Rate Limits
        2A8C c Gender
        2A8D c Heart Rate Max
        2A8E c Height
        2A8F c Hip Circumference
        2A90 c Last Name
        2A91 c Maximum Recommended Heart Rate
        2A92 c Resting Heart Rate
        2A93 c Sport Type for Aerobic and Anaerobic Thresholds
        2A94 c Three Zone Heart Rate Limits
        2A95 c Two Zone Heart Rate Limits
        2A96 c VO2 Max
        2A97 c Waist Circumference
        2A98 c Weight
        2A99 c Database Change Increment
        2A9A c User Index
        2A9B c Body Composition Feature
        2A9C c Body Composition Measurement
        2A9D c Weight Measurement
        2A9E c Weight Scale Feature
        2A9F c User Control Point
        2AA0 c Magnetic Flux Density - 2D
        2AA1 c Magnetic Flux Density - 3D
        2AA2 c Language
        2AA3 c Barometric Pressure Trend
        2AA4 c Bond Management Control Point
        2AA5 c Bond Management Feature
        2AA6 c Central Address Resolution
        2AA7 c CGM Measurement
        2AA8 c CGM Feature
        2AA9 c CGM Status
        2AAA c CGM Session Start Time
        2AAB c CGM Session Run Time
        2AAC c CGM Specific Ops Control Point
        2AAD c Indoor Positioning Configuration
        2AAE c Latitude
        2AAF c Longitude
        2AB0 c Local North Coordinate
        2AB1 c Local East Coordinate
        2AB2 c Floor Number
        2AB3 c Altitude
        2AB4 c Uncertainty
        2AB5 c Location Name
        2AB6 c URI
        2AB7 c HTTP Headers
        2AB8 c HTTP Status Code
        2AB9 c HTTP Entity Body
        2ABA c HTTP Control Point
        2ABB c HTTPS Security
        2ABC c TDS Control Point
        2ABD c OTS Feature
        2ABE c Object Name
        2ABF c Object Type
        2AC0 c Object Size
        2AC1 c Object First-Created
        2AC2 c Object Last-Modified
        2AC3 c Object ID
        2AC4 c Object Properties
        2AC5 c Object Action Control Point
        2AC6 c Object List Control Point
        2AC7 c Object List Filter
        2AC8 c Object Changed
        2AC9 c Resolvable Private Address Only
        2ACC c Fitness Machine Feature
        2ACD c Treadmill Data
        2ACE c Cross Trainer Data
        2ACF c Step Climber Data
        2AD0 c Stair Climber Data
        2AD1 c Rower Data
        2AD2 c Indoor Bike Data
        2AD3 c Training Status
        2AD4 c Supported Speed Range
        2AD5 c Supported Inclination Range
        2AD6 c Supported Resistance Level Range
        2AD7 c Supported Heart Rate Range
        2AD8 c Supported Power Range
        2AD9 c Fitness Machine Control Point
        2ADA c Fitness Machine Status
        2ADB c Mesh Provisioning Data In
        2ADC c Mesh Provisioning Data Out
        2ADD c Mesh Proxy Data In
        2ADE c Mesh Proxy Data Out
        2AE0 c Average Current
        2AE1 c Average Voltage
        2AE2 c Boolean
        2AEA c Count 16
        2AEB c Count 24
        2AED c Date UTC
        2AEE c Electric Current
        2AF2 c Energy
        2AFB c Illuminance
        2B04 c Percentage 8
        2B05 c Power
        2B18 c Voltage
        2B1D c RC Feature
        2B1E c RC Settings
        2B1F c Reconnection Configuration Control Point
        2B29 c Client Supported Features
        2B2A c Database Hash
        2B37 c Registered User
        2B3A c Server Supported Features
        2B8C c CO2 Concentration
        2BCF c Ammonia Concentration
        2BD0 c Carbon Monoxide Concentration
        2BD1 c Methane Concentration
        2BD2 c Nitrogen Dioxide Concentration
        2BD3 c Non-Methane Volatile Organic Compounds Concentration
        2BD4 c Ozone Concentration
        2BD5 c Particulate Matter - PM1 Concentration
        2BD6 c Particulate Matter - PM2.5 Concentration
        2BD7 c Particulate Matter - PM10 Concentration
        2BD8 c Sulfur Dioxide Concentration
        2BD9 c Sulfur Hexafluoride Concentration
        2BE7 c VOC Concentration
        2BE9 c Battery Critical Status
        2BEA c Battery Health Status
        2BEB c Battery Health Information
        2BEC c Battery Information
        2BED c Battery Level Status
        2BEE c Battery Time Status
        2BEF c Estimated Service Date
        2BF0 c Battery Energy Status
        2BF5 c LE GATT Security Levels
        """
}
