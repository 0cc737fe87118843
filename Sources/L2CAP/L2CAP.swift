import HCI
import ATT
