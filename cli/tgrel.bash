# tgrel.bash - bash completion for the tgrel program, installed as
# share/bash-completion/completions/tgrel (bash-completion loads it the
# first time tgrel is completed; without bash-completion, source it from
# ~/.bashrc).  Options after -, the values of --color, script files after
# -f/--file, .test files after --run-tests, .rules files elsewhere.

_tgrel_files() {    # file names (and directories) ending in $1, or any
    local IFS=$'\n' f
    compopt -o filenames 2>/dev/null
    COMPREPLY=()
    for f in $(compgen -d -- "$cur"); do COMPREPLY+=("$f/"); done
    compopt -o nospace 2>/dev/null
    if [[ -n $1 ]]; then
        for f in $(compgen -f -X "!*$1" -- "$cur"); do [[ -d $f ]] || COMPREPLY+=("$f"); done
    else
        for f in $(compgen -f -- "$cur"); do [[ -d $f ]] || COMPREPLY+=("$f"); done
    fi
    # one plain file: a space after it, as for a word
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} != */ ]]; then
        compopt +o nospace 2>/dev/null
    fi
}

_tgrel() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local opts="-e --expr -f --file -i --interactive --max-heap --max-steps --timeout --machine
        --check --shared --color --color= --cache-info --cache-clear --run-tests -h --help -v --version"
    local w tests=
    for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
        [[ $w == --run-tests ]] && tests=1
    done
    case $prev in
        -f | --file) _tgrel_files ""; return ;;
        -e | --expr | --max-heap | --max-steps | --timeout) COMPREPLY=(); return ;;
    esac
    case $cur in
        --color=*) COMPREPLY=($(compgen -W "auto always never" -- "${cur#--color=}")); return ;;
        --file=*) cur=${cur#--file=}; _tgrel_files ""; return ;;
        -*) COMPREPLY=($(compgen -W "$opts" -- "$cur"))
            [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
            return ;;
    esac
    if [[ -n $tests ]]; then _tgrel_files .test; else _tgrel_files .rules; fi
}
complete -F _tgrel tgrel
