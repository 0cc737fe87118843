import ATT
