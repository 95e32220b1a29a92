
#compdef inventory

_inventory_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _INVENTORY_COMPLETE=complete_zsh inventory)
}

compdef _inventory_completion inventory

