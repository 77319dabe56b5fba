Unicode true

####
## Crosschat Relay's NSIS installer, built by build/dist.sh with
##   wails build -platform windows/amd64 -nsis -skipbindings
## (wails writes wails_tools.nsh beside this file on every build, from
## wails.json, and passes the binary as ARG_WAILS_AMD64_BINARY).
##
## What it does:
##  - installs crosschat-relay.exe (and the WebView2 runtime if missing) into
##    Program Files\Crosschat\Crosschat Relay,
##  - adds a Start-menu shortcut, an optional desktop shortcut and an entry in
##    Apps & features with an uninstaller,
##  - optionally starts the app (hidden) at login: the same HKCU Run value the
##    app's own "Start at login" switch and `crosschat-relay autostart enable`
##    write (internal/desktop/autostart_windows.go).
## The uninstaller removes the program, its shortcuts, the Run value and the
## crosschat-relay:// handler the app registers for its toasts. It
## never touches the relay's data in %LOCALAPPDATA%\crosschat-relay (tasks,
## agents, tokens), so a reinstall or upgrade finds everything in place.
####
## The executable is crosschat-relay.exe, not "<wails.json name>.exe".
!define INFO_PROJECTNAME    "crosschat-relay"
!define PRODUCT_EXECUTABLE  "crosschat-relay.exe"
## Keep the registry key wails would derive from companyName+productName.
!define UNINST_KEY_NAME     "CrosschatCrosschat Relay"
## HKCU\...\Run value name; must equal desktop.DisplayName in Go.
!define RUN_KEY             "Software\Microsoft\Windows\CurrentVersion\Run"
!define RUN_VALUE           "Crosschat Relay"

!include "wails_tools.nsh"

# The version information for this two must consist of 4 parts
VIProductVersion "${INFO_PRODUCTVERSION}.0"
VIFileVersion    "${INFO_PRODUCTVERSION}.0"

VIAddVersionKey "CompanyName"     "${INFO_COMPANYNAME}"
VIAddVersionKey "FileDescription" "${INFO_PRODUCTNAME} Installer"
VIAddVersionKey "ProductVersion"  "${INFO_PRODUCTVERSION}"
VIAddVersionKey "FileVersion"     "${INFO_PRODUCTVERSION}"
VIAddVersionKey "LegalCopyright"  "${INFO_COPYRIGHT}"
VIAddVersionKey "ProductName"     "${INFO_PRODUCTNAME}"

# Enable HiDPI support. https://nsis.sourceforge.io/Reference/ManifestDPIAware
ManifestDPIAware true

!include "MUI2.nsh"

!define MUI_ICON "..\icon.ico"
!define MUI_UNICON "..\icon.ico"
!define MUI_ABORTWARNING
!define MUI_COMPONENTSPAGE_NODESC
!define MUI_FINISHPAGE_RUN "$INSTDIR\${PRODUCT_EXECUTABLE}"
!define MUI_FINISHPAGE_RUN_TEXT "Open ${INFO_PRODUCTNAME} now"

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH

!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES

!insertmacro MUI_LANGUAGE "English"

## Signing hooks (osslsigncode or signtool); the path is given in %1.
#!uninstfinalize 'osslsigncode sign ... -in "%1" -out "%1.signed" && mv "%1.signed" "%1"'
#!finalize 'osslsigncode sign ... -in "%1" -out "%1.signed" && mv "%1.signed" "%1"'

Name "${INFO_PRODUCTNAME}"
OutFile "..\..\bin\${INFO_PROJECTNAME}-${ARCH}-installer.exe"
InstallDir "$PROGRAMFILES64\${INFO_COMPANYNAME}\${INFO_PRODUCTNAME}"
ShowInstDetails show
ShowUninstDetails show

Function .onInit
   !insertmacro wails.checkArchitecture
FunctionEnd

# Ask a running copy (window app or serve) to quit so its exe can be replaced
# or removed. Best effort: `quit` needs the relay to be reachable with the
# current user's token; if it is not running this does nothing.
!macro crosschat.quitRunning
    ${If} ${FileExists} "$INSTDIR\${PRODUCT_EXECUTABLE}"
        nsExec::Exec '"$INSTDIR\${PRODUCT_EXECUTABLE}" quit'
        Pop $0 # exit code: non-zero when nothing was running
        Sleep 1500
    ${EndIf}
!macroend

Section "!${INFO_PRODUCTNAME} (required)" SecMain
    SectionIn RO
    !insertmacro wails.setShellContext

    !insertmacro wails.webview2runtime

    SetOutPath $INSTDIR
    !insertmacro crosschat.quitRunning

    !insertmacro wails.files

    CreateShortcut "$SMPROGRAMS\${INFO_PRODUCTNAME}.lnk" "$INSTDIR\${PRODUCT_EXECUTABLE}"

    !insertmacro wails.associateFiles
    !insertmacro wails.associateCustomProtocols

    !insertmacro wails.writeUninstaller
SectionEnd

Section "Desktop shortcut" SecDesktop
    !insertmacro wails.setShellContext
    CreateShortCut "$DESKTOP\${INFO_PRODUCTNAME}.lnk" "$INSTDIR\${PRODUCT_EXECUTABLE}"
SectionEnd

# Off by default. Written for the user running the installer (HKCU), in the
# exact form the app writes: "<exe>" --hidden (the window stays in the tray
# until opened). Turn it on or off later from the app or with
# `crosschat-relay autostart enable|disable`.
Section /o "Start at login (hidden)" SecAutostart
    WriteRegStr HKCU "${RUN_KEY}" "${RUN_VALUE}" '"$INSTDIR\${PRODUCT_EXECUTABLE}" --hidden'
SectionEnd

Section "uninstall"
    !insertmacro wails.setShellContext

    !insertmacro crosschat.quitRunning

    # Start at login: the installer's option or the app's switch (same value).
    DeleteRegValue HKCU "${RUN_KEY}" "${RUN_VALUE}"
    # What the app registers for its toasts (internal/desktop/urlscheme_windows.go):
    # the crosschat-relay:// URL a clicked toast opens, and the toasts' AppUserModelID.
    DeleteRegKey HKCU "Software\Classes\crosschat-relay"
    DeleteRegKey HKCU "Software\Classes\AppUserModelId\Crosschat.CrosschatRelay"

    # WebView2's cache (%APPDATA%\crosschat-relay.exe), not the relay's data.
    SetShellVarContext current
    RMDir /r "$AppData\${PRODUCT_EXECUTABLE}"
    !insertmacro wails.setShellContext

    # The program only. The relay's data (%LOCALAPPDATA%\crosschat-relay:
    # relay.db, api-token) is kept; delete that folder by hand to remove it.
    Delete "$INSTDIR\${PRODUCT_EXECUTABLE}"
    !insertmacro wails.unassociateFiles
    !insertmacro wails.deleteUninstaller
    RMDir $INSTDIR
    RMDir "$PROGRAMFILES64\${INFO_COMPANYNAME}"

    Delete "$SMPROGRAMS\${INFO_PRODUCTNAME}.lnk"
    Delete "$DESKTOP\${INFO_PRODUCTNAME}.lnk"

    !insertmacro wails.unassociateCustomProtocols
SectionEnd
